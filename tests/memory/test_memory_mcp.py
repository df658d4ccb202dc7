"""The memory tools on /api/mcp: the layers hold through MCP, and the text copies read well."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from typing import Any

from django.test import TestCase, override_settings
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value

from grants.principals import SYSTEM
from grants.services import member_create
from memory.models import Memory
from oauth.config import provider_settings

BASE = "https://brain.example.org"


@override_settings(BRAIN_BASE_URL=BASE, OAUTH2_PROVIDER=provider_settings(BASE, ["https"]))
class MemoryMcpTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")
        cls.app = Application.objects.create(
            name="Agent", client_type="public", authorization_grant_type="authorization-code",
            redirect_uris="https://agent.example/cb",
        )  # fmt: skip

    def token_for(self, member: Any, scope: str = "memory") -> str:
        raw = secrets.token_urlsafe(32)
        token = AccessToken(
            user=member.user, application=self.app, scope=scope, resource=[f"{BASE}/api/mcp"],
            expires=timezone.now() + dt.timedelta(hours=1),
        )  # fmt: skip
        set_token_value(token, raw)
        token.save()
        return raw

    def call(self, token: str, name: str, **arguments: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = self.client.post(
            "/api/mcp", data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == 200, response.content
        return dict(response.json()["result"])

    def test_a_teammate_gets_the_missing_answer_for_a_personal_memory_through_every_tool(self) -> None:
        alice, bob = self.token_for(self.alice), self.token_for(self.bob)
        stored = self.call(alice, "remember", content="My salary review is in June.")
        assert stored["structuredContent"]["outcome"] == "stored"
        memory_id = stored["structuredContent"]["id"]
        assert f"ID: {memory_id}" in stored["content"][0]["text"]
        missing = "00000000-0000-0000-0000-000000000000"
        own = self.call(bob, "remember", content="Bob's own note about June planning.")["structuredContent"]["id"]
        for name, args in (
            ("get", {"id": memory_id}),
            ("append", {"id": memory_id, "text": "x"}),
            ("update", {"id": memory_id, "content": "x"}),
            ("set_status", {"id": memory_id, "status": "deprecated"}),
            ("forget", {"id": memory_id}),
            ("share", {"id": memory_id}),
            ("connections", {"id": memory_id}),
            ("link", {"from_id": own, "to_id": memory_id}),
        ):
            hidden = self.call(bob, name, **args)
            absent = self.call(bob, name, **{k: (missing if v == memory_id else v) for k, v in args.items()})
            assert hidden["isError"] is True, name
            assert hidden["content"] == absent["content"], name
        recalled = self.call(bob, "recall", query="salary review")["structuredContent"]["results"]
        assert memory_id not in {item["id"] for item in recalled}
        listed = self.call(bob, "list_recent", n=50)["structuredContent"]["memories"]
        assert memory_id not in {item["id"] for item in listed}
        assert Memory.objects.get(pk=memory_id).content == "My salary review is in June."
        malformed = self.call(bob, "get", id="not-a-uuid")
        assert malformed["content"] == self.call(bob, "get", id=missing)["content"]

    def test_shared_memories_show_their_author_and_refuse_non_authors(self) -> None:
        alice, bob = self.token_for(self.alice), self.token_for(self.bob)
        memory_id = self.call(alice, "remember", content="We ship on Thursdays.", workspace="company")[
            "structuredContent"
        ]["id"]
        seen = self.call(bob, "get", id=memory_id)
        assert seen["structuredContent"]["author"] == "alice"
        refused = self.call(bob, "append", id=memory_id, text="and Fridays")
        assert refused["isError"] is True
        assert refused["content"][0]["text"] == "only the author or an admin may change a shared memory"

    def test_recall_text_carries_ids_and_match_percentages_and_output_is_budgeted(self) -> None:
        alice = self.token_for(self.alice)
        self.call(alice, "remember", content="The staging database is rebuilt every night at 2am.")
        text = self.call(alice, "recall", query="when is staging reset")["content"][0]["text"]
        assert "% match)" in text
        assert "ID: " in text
        themes = ["the quarterly sales forecast for Europe", "kitchen renovation plans and tiles",
                  "the Kubernetes upgrade runbook", "birdwatching trips along the coast"]  # fmt: skip
        for theme in themes:
            stored = self.call(alice, "remember", content=(f"Notes on {theme}. " * 400)[:9000])
            assert stored["structuredContent"]["outcome"] != "duplicate"
        listed = self.call(alice, "list_recent", n=10)["content"][0]["text"]
        assert len(listed) <= 12_000
        assert listed.endswith("narrow the request for more]")

    def test_list_teams_names_the_shared_layer(self) -> None:
        teams = self.call(self.token_for(self.alice), "list_teams")["structuredContent"]["teams"]
        assert teams == [{"id": "company", "name": "Shared", "workspace": "company"}]

    def test_bad_arguments_come_back_as_tool_errors_naming_the_problem(self) -> None:
        answer = self.call(self.token_for(self.alice), "remember", content="x", workspace="team")
        assert answer["isError"] is True
        assert "workspace" in answer["content"][0]["text"]
