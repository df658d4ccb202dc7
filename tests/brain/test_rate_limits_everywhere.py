"""Every costly path is rate limited, in one window per person shared by every surface."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from builds.services import build_credential_issue, build_open
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.services import memory_remember
from memory.tokens import api_token_issue
from tests.base import BrainTestCase, page_markdown, start_of_fresh_rate_window

CAPS = {"read": 1000, "search": 2, "write": 2, "import": 3, "upload": 2, "ask": 1, "register": 100}


@override_settings(BRAIN_MCP_RATE_LIMITS=CAPS)
class CostlyPathsAreLimitedTests(BrainTestCase):
    """Windows are keyed by member id and ids are never reused: a member made per test starts empty."""

    def setUp(self) -> None:
        self.dora = member_create(actor=SYSTEM, username="dora")
        grant_issue(actor=SYSTEM, member=self.dora, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.dora, path="topics/", permission="suggest")
        self.token = api_token_issue(actor=self.dora, name="cli")[1]
        self.auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}
        start_of_fresh_rate_window(margin=20)

    def assert_limited(self, response: Any) -> None:
        assert response.status_code == 429, (response.status_code, response.content[:200])
        assert int(response["Retry-After"]) >= 1

    def test_memory_writes_share_one_write_window_across_rest_and_the_dashboard(self) -> None:
        memory = memory_remember(actor=self.dora, content="We ship on Thursdays.").memory
        capture = self.client.post(
            "/api/memory/capture", data=json.dumps({"content": "Deploys need a review."}),
            content_type="application/json", **self.auth,
        )  # fmt: skip
        assert capture.status_code == 201
        append = self.client.post(
            f"/api/memory/entries/{memory.pk}/append", data=json.dumps({"text": "And Fridays."}),
            content_type="application/json", **self.auth,
        )  # fmt: skip
        assert append.status_code == 200
        patch = self.client.patch(
            f"/api/memory/entries/{memory.pk}", data=json.dumps({"content": "We ship on Fridays."}),
            content_type="application/json", **self.auth,
        )  # fmt: skip
        self.assert_limited(patch)
        self.client.force_login(self.dora.user)
        self.assert_limited(self.client.post("/memory/", {"content": "One more thing."}))
        # Reads are another class: still fine.
        assert self.client.get(f"/api/memory/entries/{memory.pk}", **self.auth).status_code == 200

    def test_a_bulk_import_counts_every_record(self) -> None:
        lines = "\n".join(json.dumps({"content": f"Imported fact number {n}."}) for n in range(4))
        response = self.client.post("/api/memory/import", data=lines, content_type="application/x-ndjson", **self.auth)
        self.assert_limited(response)

    def test_uploads_and_imports_share_the_upload_window(self) -> None:
        first = self.client.post("/api/sources", {"file": SimpleUploadedFile("a.txt", b"first notes")}, **self.auth)
        assert first.status_code == 202
        self.client.force_login(self.dora.user)
        second = self.client.post("/sources/upload", {"file": SimpleUploadedFile("b.txt", b"second notes")})
        assert second.status_code in (200, 302)
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("topics/pricing/a.md", page_markdown())
        third = self.client.post(
            "/builds/import", {"title": "x", "archive": SimpleUploadedFile("a.zip", archive.getvalue())}
        )
        self.assert_limited(third)

    def test_web_search_and_ask(self) -> None:
        self.client.force_login(self.dora.user)
        assert self.client.get("/search?q=pricing").status_code == 200
        assert self.client.get("/search?q=discount").status_code == 200
        self.assert_limited(self.client.get("/search?q=renewal"))
        assert self.client.post("/ask", {"text": "Who approves discounts?"}).status_code in (200, 302)
        over = self.client.post("/ask", {"text": "Who approves refunds?"})
        self.assert_limited(over)
        # The form again, the question still in it (the bare 429 page lost it), and when to retry.
        page = over.content.decode()
        assert "Who approves refunds?" in page
        assert "ask again in" in page

    def test_mcp_memory_writes_count_in_the_same_window_as_rest(self) -> None:
        from brain.ratelimit import RateLimited
        from mcp_api.base import PERSON, Caller
        from mcp_api.dispatch import dispatch

        capture = self.client.post(
            "/api/memory/capture", data=json.dumps({"content": "Backups run nightly."}),
            content_type="application/json", **self.auth,
        )  # fmt: skip
        assert capture.status_code == 201
        caller = Caller(principal=self.dora, kind=PERSON, scopes=frozenset({"memory"}))
        arguments = {"content": "Restores are tested monthly."}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "remember", "arguments": arguments}}  # fmt: skip
        assert dispatch(message, caller, "2025-06-18") is not None
        try:
            dispatch({**message, "id": 2}, caller, "2025-06-18")
        except RateLimited:
            return
        raise AssertionError("the third embedding write in the window was not limited")

    def test_build_uploads_through_mcp_are_not_writes_of_this_kind(self) -> None:
        # Build tools write drafts (no embedding until promotion): they stay in the read class.
        build = build_open(actor=self.dora, title="t")
        _, token = build_credential_issue(actor=self.dora, build=build)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_branch", "arguments": {}}}
        for _ in range(3):
            response = self.client.post(
                "/api/build/mcp", data=json.dumps(body), content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {token}",
            )  # fmt: skip
            assert response.status_code == 200
