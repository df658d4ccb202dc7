"""On every write, a target the caller cannot read answers exactly as a missing one.

Each build write tool that names a page, a capture or a figure's page is called twice by an
agent whose requester holds suggest on ``topics/``: once naming a restricted page it cannot
read, once naming a path where nothing exists. Status, body (the target and request id
aside) and the shape of what was written must be the same. A draft accepted over a hidden
page can never replace it unseen: promotion refuses it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.test import override_settings

from builds.models import Build, BuildChange
from builds.selectors import build_promotion_blockers
from builds.services import PromotionBlocked, build_credential_issue, build_open, build_promote, build_submit
from corpus.models import Revision
from corpus.selectors import page_read
from corpus.services import revision_promote
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import DISCOUNT_POLICY, BrainTestCase, capture, page_markdown, publish

MISSING = "topics/pricing/nothing-here.md"


def normalise(body: dict[str, Any], target: str) -> str:
    text = json.dumps(body, sort_keys=True).replace(target, "<target>")
    text = re.sub(r"-[0-9a-f]{6}\b", "-<suffix>", text)  # server-assigned capture key suffixes
    return re.sub(r'"request_id": "[^"]+"', '"request_id": "<id>"', text)


class HiddenEqualsMissingTests(BrainTestCase):
    def setUp(self) -> None:
        self.dora = member_create(actor=SYSTEM, username="dora")
        grant_issue(actor=SYSTEM, member=self.dora, path="topics/", permission="suggest")
        publish("topics/pricing/price-list.md", title="Price list")
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")

    def fresh_build(self) -> tuple[Build, str]:
        build = build_open(actor=self.dora, title="Agent edits")
        return build, build_credential_issue(actor=self.dora, build=build)[1]

    def call(self, token: str, name: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = self.client.post(
            "/api/build/mcp", data=json.dumps(body), content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )  # fmt: skip
        return response.status_code, dict(response.json())

    def compare(self, name: str, arguments: Any) -> list[Build]:
        """Run ``arguments(target)`` against the hidden page and the missing path; same answers."""
        answers, builds = [], []
        for target in (DISCOUNT_POLICY, MISSING):
            build, token = self.fresh_build()
            status, body = self.call(token, name, arguments(target))
            changes = sorted((c.action, c.path == target or c.new_path == target) for c in build.changes.all())
            answers.append((status, normalise(body, target), changes))
            builds.append(build)
        assert answers[0] == answers[1], (name, answers)
        return builds

    def test_each_write_tool_answers_a_hidden_target_as_a_missing_one(self) -> None:
        markdown = page_markdown(owner="dora", title="Mine", category="pricing")
        self.compare("write_page", lambda target: {"path": target, "markdown": markdown})
        self.compare("move_page", lambda target: {"path": "topics/pricing/price-list.md", "new_path": target})
        self.compare("delete_page", lambda target: {"path": target})
        self.compare("link_pages", lambda target: {"path": "topics/pricing/price-list.md", "target": target})
        self.compare("unlink_pages", lambda target: {"path": target, "target": "topics/pricing/price-list.md"})
        self.compare("read_draft", lambda target: {"path": target})
        self.compare(
            "record_figure",
            lambda target: {"page_path": target, "key": "arr", "value": "1", "unit": "EUR", "as_of": "2026-11-01"},
        )

    def test_a_capture_key_someone_else_holds_is_never_observable(self) -> None:
        from corpus.models import Source

        grant_issue(actor=SYSTEM, member=self.dora, path="captures/notes/", permission="suggest")
        capture("notes/board-minutes", title="Board", sensitivity="restricted", category="finance")
        answers = []
        for key in ("notes/board-minutes", "notes/never-used"):
            build, token = self.fresh_build()
            status, body = self.call(token, "record_capture", {"key": key, "kind": "note", "title": "Mine"})
            answers.append((status, normalise(body, key), build.captures.count()))
        assert answers[0] == answers[1], answers
        assert answers[0][0] == 200
        assert Source.objects.filter(key="notes/board-minutes").count() == 1  # the hidden one, untouched

        # Uploading bytes identical to a capture the uploader cannot read: no telltale key.
        from ingest.services import document_ingest

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.dora, path="captures/uploads/", permission="suggest")
        hidden = document_ingest(actor=self.alice, filename="a.txt", data=b"same bytes", key="private/a", enqueue=False)
        theirs = document_ingest(actor=self.dora, filename="a.txt", data=b"same bytes", enqueue=False)
        fresh = document_ingest(actor=self.dora, filename="b.txt", data=b"other bytes", enqueue=False)
        shapes = {re.sub(r"[0-9a-f]{6}$", "", e.document.source.key) for e in (theirs, fresh)}
        assert len(shapes) == 1, shapes
        assert hidden.document.source.key != theirs.document.source.key

    def test_a_draft_over_a_hidden_page_is_shown_to_its_author_as_new_and_never_promoted(self) -> None:
        build, token = self.fresh_build()
        markdown = page_markdown(owner="dora", title="Mine", category="pricing")
        status, body = self.call(token, "write_page", {"path": DISCOUNT_POLICY, "markdown": markdown})
        assert status == 200
        assert body["result"]["structuredContent"] == {"path": DISCOUNT_POLICY, "action": "write"}
        _, diff = self.call(token, "diff_page", {"path": DISCOUNT_POLICY})
        lines = diff["result"]["structuredContent"]["diff"]
        assert not any(line.startswith("-") and not line.startswith("---") for line in lines)  # nothing "removed"
        build = build_submit(actor=self.dora, build=build)
        # Alice can read (and approve) the live page: she is told why it cannot go ahead.
        blockers = build_promotion_blockers(build=build, approver=self.alice)
        assert any("replace it unseen" in blocker for blocker in blockers)
        with pytest.raises(PromotionBlocked):
            build_promote(actor=self.alice, build=build, note="no")
        revision = BuildChange.objects.get(build=build).revision
        assert revision is not None
        with pytest.raises(PermissionDenied, match="cannot read the live page"):
            revision_promote(actor=SYSTEM, revision=Revision.objects.get(pk=revision.pk))
        assert "Discount policy" in page_read(principal=self.alice, path=DISCOUNT_POLICY).title

    def test_an_archive_import_answers_a_hidden_path_as_a_free_one(self) -> None:
        from builds.services import validate_import_files

        markdown = page_markdown(owner="dora", title="Mine", category="pricing")
        outcomes = []
        for target in (DISCOUNT_POLICY, MISSING):
            pending, reports = validate_import_files(requester=self.dora, files=[(target, markdown)])
            outcomes.append((len(pending), [str(p) for r in reports for p in r.problems]))
        assert outcomes[0] == outcomes[1], outcomes

    def test_a_redraft_shows_no_related_page_or_capture_the_author_cannot_read(self) -> None:
        capture("notes/closed", title="Closed notes", sensitivity="restricted", category="finance")
        publish(
            "topics/pricing/overview.md", title="Overview", sources=["notes/closed"],
            related=[DISCOUNT_POLICY],
        )  # fmt: skip
        _build, token = self.fresh_build()
        _, linked = self.call(
            token, "link_pages", {"path": "topics/pricing/overview.md", "target": "topics/pricing/price-list.md"}
        )
        _, draft = self.call(token, "read_draft", {"path": "topics/pricing/overview.md"})
        _, diff = self.call(token, "diff_page", {"path": "topics/pricing/overview.md"})
        shown = json.dumps([linked, draft, diff])
        assert "discount-policy" not in shown
        assert "notes/closed" not in shown

    def test_read_page_lists_only_the_sources_and_related_pages_the_reader_can_open(self) -> None:
        capture("notes/open", title="Open notes")
        capture("notes/closed", title="Closed notes", sensitivity="restricted", category="finance")
        grant_issue(actor=SYSTEM, member=self.bob, path="captures/notes/", permission="read")
        publish(
            "topics/pricing/overview.md", title="Overview", sources=["notes/open", "notes/closed"],
            related=["topics/pricing/price-list.md", DISCOUNT_POLICY],
        )  # fmt: skip
        view = page_read(principal=self.bob, path="topics/pricing/overview.md")
        assert view.sources == ["notes/open"]
        assert view.related == ["topics/pricing/price-list.md"]
        self.client.force_login(self.bob.user)
        html = self.client.get("/pages/topics/pricing/overview.md").content.decode()
        assert "notes/closed" not in html
        assert "discount-policy" not in html

    @override_settings(BRAIN_BUILD_DRIVER={"BATCH_SIZE": 1})
    def test_import_progress_counts_are_for_the_requester_only(self) -> None:
        from builds.driver import import_job_create, job_step
        from builds.models import BuildJob

        files = [(f"topics/pricing/p-{n}.md", page_markdown(owner="dora", title=f"P {n}")) for n in range(3)]
        with self.captureOnCommitCallbacks(execute=False):
            build = import_job_create(requester=self.dora, files=files, title="Import")
            assert job_step(BuildJob.objects.get(build=build).pk) == "progress"
        self.client.force_login(self.dora.user)
        assert "1 of 3" in self.client.get(f"/builds/{build.public_id}/progress").content.decode()
        self.client.force_login(self.alice.user)  # approves topics/pricing/p-0.md: sees the open build
        response = self.client.get(f"/builds/{build.public_id}/progress")
        assert response.status_code == 200
        assert " of 3" not in response.content.decode()
        assert "Drafting" in response.content.decode()
