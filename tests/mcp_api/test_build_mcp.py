"""The build MCP endpoint, driven by the official ``mcp`` client against a live test server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
from django.test import LiveServerTestCase
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from builds.models import Build, BuildChange
from builds.services import build_credential_issue, build_open
from corpus.models import Page
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from mcp_api.tools import CATALOGUE
from tests.base import DISCOUNT_POLICY, page_markdown, publish, start_of_fresh_rate_window

BRANCH_TOOLS = {
    "read_branch", "read_draft", "write_page", "delete_page", "move_page", "record_capture", "record_figure",
    "link_pages", "unlink_pages", "diff_page", "validate_page", "submit_for_review",
}  # fmt: skip
READ_TOOLS = {
    "find_page", "read_page", "search", "read_figure", "page_relationships", "list_sources", "search_sources",
    "read_source",
}  # fmt: skip


class BuildMcpTests(LiveServerTestCase):
    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice")
        self.bob = member_create(actor=SYSTEM, username="bob")
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="suggest")
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\n## Plans\n\nTeam plan.\n")
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted")  # hidden from alice
        self.build = build_open(actor=self.alice, title="Agent edits")
        _, self.token = build_credential_issue(actor=self.alice, build=self.build)
        self.url = f"{self.live_server_url}/api/build/mcp"

    async def _session(self, mode: str, work: Any) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        async with Client(streamable_http_client(self.url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
            return await work(client)

    def run_client(self, work: Any, mode: str = "legacy") -> Any:
        return asyncio.run(self._session(mode, work))

    def test_a_build_credential_sees_exactly_20_tools_in_both_modes(self) -> None:
        async def names(client: Client) -> set[str]:
            return {tool.name for tool in (await client.list_tools()).tools}

        for mode in ("legacy", "auto"):
            with self.subTest(mode=mode):
                assert self.run_client(names, mode) == READ_TOOLS | BRANCH_TOOLS
        assert sum(1 for tool in CATALOGUE if "build" in tool.kinds) == 20

    def test_write_read_diff_and_submit_end_to_end(self) -> None:
        async def work(client: Client) -> dict[str, Any]:
            out: dict[str, Any] = {}
            markdown = page_markdown(title="Price list", body="# Price list\n\n## Plans\n\nTeam and Enterprise.\n")
            written = await client.call_tool(
                "write_page", {"path": "topics/pricing/price-list.md", "markdown": markdown}
            )
            out["written"] = written.structured_content
            out["diff"] = (
                await client.call_tool("diff_page", {"path": "topics/pricing/price-list.md"})
            ).structured_content
            out["live"] = (
                await client.call_tool("read_page", {"path": "topics/pricing/price-list.md"})
            ).structured_content
            out["invalid"] = await client.call_tool("validate_page", {"path": "Topics/x.md", "markdown": "x"})
            out["submitted"] = (await client.call_tool("submit_for_review", {})).structured_content
            return out

        out = self.run_client(work)
        assert out["written"] == {"path": "topics/pricing/price-list.md", "action": "write"}
        assert "+Team and Enterprise." in out["diff"]["diff"]
        assert "Team plan." in out["live"]["body"]  # the draft is not live
        assert out["invalid"].structured_content["valid"] is False
        assert out["submitted"] == {"status": "awaiting_review"}
        assert Build.objects.get(pk=self.build.pk).status == Build.Status.AWAITING_REVIEW
        assert BuildChange.objects.filter(build=self.build).count() == 1
        assert Page.objects.get(path="topics/pricing/price-list.md").title == "Price list"

    def test_hidden_page_reads_exactly_like_a_missing_one(self) -> None:
        async def work(client: Client) -> list[Any]:
            hidden = await client.call_tool("read_page", {"path": DISCOUNT_POLICY})
            missing = await client.call_tool("read_page", {"path": "topics/pricing/nope.md"})
            return [hidden, missing]

        hidden, missing = self.run_client(work)
        assert hidden.is_error
        assert missing.is_error
        assert hidden.content[0].text == missing.content[0].text == "Not found."

    def test_made_up_tool_errors_like_a_hidden_one(self) -> None:
        # A person's OAuth caller would not see branch tools; here both unknown names answer alike.
        import requests

        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        answers = []
        for name in ("no_such_tool", "ask"):
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}
            response = requests.post(self.url, data=json.dumps(body), headers=headers, timeout=10)
            error = response.json()["error"]
            answers.append((response.status_code, error["code"], error["message"].replace(name, "X")))
        assert answers[0] == answers[1]


class TransportTests(LiveServerTestCase):
    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice")
        build = build_open(actor=self.alice, title="Agent edits")
        _, self.token = build_credential_issue(actor=self.alice, build=build)
        self.url = f"{self.live_server_url}/api/build/mcp"

    def post(self, body: Any, **headers: str) -> Any:
        import requests

        all_headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", **headers}
        return requests.post(self.url, data=json.dumps(body), headers=all_headers, timeout=10)

    def test_version_matrix_and_refusals(self) -> None:
        import requests

        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        for version in ("2025-11-25", "2025-06-18", "2025-03-26"):
            response = self.post(ping, **{"MCP-Protocol-Version": version})
            assert response.status_code == 200
            assert response.headers["MCP-Protocol-Version"] == version
        default = self.post(ping)
        assert default.headers["MCP-Protocol-Version"] == "2025-06-18"
        unknown = self.post(ping, **{"MCP-Protocol-Version": "2099-01-01"})
        assert unknown.status_code == 400
        assert unknown.json()["error"]["data"]["supported"] == ["2025-11-25", "2025-06-18", "2025-03-26"]
        get = requests.get(self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=10)
        assert get.status_code == 405
        assert get.headers["Allow"] == "POST"
        assert get.headers["MCP-Protocol-Version"] == "2025-06-18"
        assert "x-request-id" in get.headers
        foreign = self.post(ping, Origin="https://evil.example")
        assert foreign.status_code == 403
        notification = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert notification.status_code == 202
        # A response the client posts (answering a request this server never sends) is accepted
        # with no body; a notification that cannot be read is an HTTP error whose body has no
        # id (MCP 2025-06-18, Streamable HTTP). Both were 200 answers no request was pending for.
        for answer in ({"jsonrpc": "2.0", "id": 1, "result": {}}, {"jsonrpc": "2.0", "id": "a", "error": {"code": 1}}):
            accepted = self.post(answer)
            assert (accepted.status_code, accepted.text) == (202, ""), answer
        broken = self.post({"jsonrpc": "2.0", "method": 5})
        assert broken.status_code == 400
        assert broken.json()["id"] is None
        batch = self.post([{"jsonrpc": "2.0", "id": 3, "result": {}}, ping], **{"MCP-Protocol-Version": "2025-03-26"})
        assert [item["id"] for item in batch.json()] == [7]  # the response element is not answered
        bad = self.post(ping, Authorization="Bearer bld_wrong")
        assert bad.status_code == 401
        assert "invalid_token" in bad.headers["WWW-Authenticate"]
        call = self.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_page", "arguments": {}}}
        )
        result = call.json()["result"]
        assert result["isError"] is True
        assert "path" in result["content"][0]["text"]
        for response in (unknown, get, foreign, bad, call):
            text = response.text
            assert "Traceback" not in text
            assert "/work/" not in text
            assert "SELECT" not in text


class RateLimitTests(TransportTests):
    def test_429_with_retry_after_and_the_request_id(self) -> None:
        from django.test import override_settings

        call = {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "find_page", "arguments": {}}}
        start_of_fresh_rate_window()
        with override_settings(BRAIN_MCP_RATE_LIMITS={"read": 3, "search": 1, "ask": 1}):
            statuses = [self.post(call).status_code for _ in range(3)]
            limited = self.post(call)
        assert statuses == [200, 200, 200]
        assert limited.status_code == 429
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
        assert limited.headers["Cache-Control"] == "no-store"
        body = limited.json()
        assert body["id"] == 42
        assert body["error"]["data"]["request_id"] == limited.headers["x-request-id"]
