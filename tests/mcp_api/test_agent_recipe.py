"""docs/mcp.md's agent recipe, step by step, with the official ``mcp`` client on a live server.

The test reads the recipe's section of the document and fails if it names a tool the test
does not call, so the document and what is tested cannot drift apart.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path
from typing import Any

import httpx2
from django.core.management import call_command
from django.test import LiveServerTestCase, override_settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from builds.models import Build
from builds.services import build_promote
from corpus.models import Figure, Page, Source
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from mcp_api.tools import CATALOGUE
from tests.base import page_markdown, publish

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
PRICE_LIST = "topics/pricing/price-list.md"


def recipe_tools() -> set[str]:
    text = DOC.read_text()
    section = text[text.index("## An agent build, start to finish") :]
    section = section[: section.index("\n## ", 3)]
    return set(re.findall(r"`([a-z_]+)`", section)) & {tool.name for tool in CATALOGUE}


class AgentRecipeTests(LiveServerTestCase):
    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice", password="pw-alice-123")
        self.victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.victor, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=self.victor, path="captures/", permission="approve")
        publish(PRICE_LIST, title="Price list", body="# Price list\n\n## Plans\n\nTeam plan at 12 EUR a seat.\n")

    def test_the_documented_recipe_end_to_end(self) -> None:
        # 1. Open a build and get its credential, without a shell of Python.
        out = io.StringIO()
        with override_settings(BRAIN_BASE_URL=self.live_server_url):
            call_command("build_open", "--requester", "alice", "--title", "Seat prices", stdout=out)
        printed = out.getvalue()
        config = json.loads(printed[printed.index("{") :])["mcpServers"]["brain-build"]
        build = Build.objects.get(title="Seat prices")
        assert config["url"] == f"{self.live_server_url}/api/build/mcp"
        assert config["headers"]["Authorization"].removeprefix("Bearer ") in printed

        # 2-5. Connect with exactly the printed configuration; read, write, check, submit.
        called: set[str] = set()

        async def call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
            called.add(name)
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            return result.structured_content

        async def agent(client: Client) -> dict[str, Any]:
            seen: dict[str, Any] = {}
            seen["live"] = await call(client, "read_page", {"path": PRICE_LIST})
            seen["found"] = await call(client, "search", {"query": "team plan seat"})
            capture = {"key": "calls/finance", "kind": "note", "title": "Finance call",
                       "text": "Finance approved 14 EUR a seat."}  # fmt: skip
            key = (await call(client, "record_capture", capture))["key"]
            new_page = "topics/pricing/seat-price.md"
            markdown = page_markdown(title="Seat price", sources=[key.removeprefix("capture:")],
                                     body="# Seat price\n\n14 EUR a seat from January.\n")  # fmt: skip
            seen["valid"] = await call(client, "validate_page", {"path": new_page, "markdown": markdown})
            await call(client, "write_page", {"path": new_page, "markdown": markdown})
            await call(client, "record_figure", {"page_path": new_page, "key": "seat-price", "value": "14",
                                                 "unit": "EUR", "as_of": "2027-01-01",
                                                 "source_key": key.removeprefix("capture:")})  # fmt: skip
            edited = page_markdown(title="Price list", body="# Price list\n\n## Plans\n\nTeam plan at 14 EUR.\n")
            await call(client, "write_page", {"path": PRICE_LIST, "markdown": edited})
            await call(client, "move_page", {"path": PRICE_LIST, "new_path": "topics/pricing/prices.md"})
            seen["moved"] = await call(client, "read_draft", {"path": "topics/pricing/prices.md"})
            seen["diff"] = await call(client, "diff_page", {"path": new_page})
            seen["submitted"] = await call(client, "submit_for_review", {})
            return seen

        seen = self.run_agent(config, agent)
        assert "Team plan at 12 EUR" in seen["live"]["body"]
        assert seen["valid"]["valid"] is True
        assert "Team plan at 14 EUR" in json.dumps(seen["moved"])  # the edit survived the move
        assert "+14 EUR a seat from January." in seen["diff"]["diff"]
        assert seen["submitted"] == {"status": "awaiting_review"}
        assert not recipe_tools() - called, f"docs/mcp.md names tools the recipe test skips: {recipe_tools() - called}"

        # A person approves; everything the agent wrote goes live together.
        build_promote(actor=self.victor, build=Build.objects.get(pk=build.pk), note="Matches the finance call")
        page = Page.objects.get(path="topics/pricing/seat-price.md")
        assert Source.objects.get(key__startswith="calls/finance").is_live
        assert Figure.objects.get(key="seat-price", page=page).is_live
        assert Page.objects.filter(path="topics/pricing/prices.md").exists()
        assert not Page.objects.filter(path=PRICE_LIST, current_revision__isnull=False).exists()

        # The build shows what was approved; the credential has stopped working.
        self.client.force_login(self.alice.user)
        summary = self.client.get(f"/api/builds/{build.public_id}").json()
        assert summary["status"] == "promoted"
        assert summary["blockers"] == []
        assert summary["promotion"]["note"] == "Matches the finance call"
        assert {change["path"] for change in summary["promotion"]["changes"]} >= {"topics/pricing/seat-price.md"}
        refused = httpx2.post(config["url"], headers={**config["headers"], "Accept": "application/json"},
                              json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # fmt: skip
        assert refused.status_code == 401

    def run_agent(self, config: dict[str, Any], work: Any) -> Any:
        async def session() -> Any:
            http = httpx2.AsyncClient(headers=config["headers"], timeout=30)
            async with Client(streamable_http_client(config["url"], http_client=http)) as client:  # type: ignore[arg-type]
                return await work(client)

        return asyncio.run(session())
