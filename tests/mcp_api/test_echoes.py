"""What an error echoes of the caller's own names: bounded, redacted whole, unknown names only
when they read as a mistyped name — over MCP and REST alike."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from memory.tokens import api_token_issue
from tests.base import BrainTestCase, oauth_access_token

# Built by concatenation so the repository holds no scannable literal.
AWS = "AKIA" + "Q3ZXVB7TR2LMN4PK"
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


class McpEchoTests(BrainTestCase):
    def setUp(self) -> None:
        self.token = oauth_access_token(self.alice.user, scope="corpus:read memory", resource_path="/api/mcp")

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params is not None else {})}
        response = self.client.post("/api/mcp", data=json.dumps(body), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {self.token}")  # fmt: skip
        assert response.status_code == 200, response.content[:300]
        return response.json()  # type: ignore[no-any-return]

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        answer = self.rpc("tools/call", {"name": name, "arguments": arguments})
        if "error" in answer:
            return str(answer["error"]["message"])
        return str(answer["result"]["content"][0]["text"])

    def test_a_key_straddling_the_cut_is_not_half_shown(self) -> None:
        """The name was cut to 100 characters, then redacted: the cut key no longer read as one."""
        method = self.rpc("m" * 85 + " " + AWS)["error"]["message"]
        tool = self.call("x" * 85 + " " + GITHUB, {})
        assert AWS[:8] not in method, method
        assert GITHUB[:8] not in tool, tool
        assert "REDACTED" in method
        assert len(method) < 200

    def test_unknown_argument_names_are_bounded_and_named_only_when_they_read_as_names(self) -> None:
        huge = self.call("find_page", {"k" * 900_000: 1})
        assert len(huge) < 1_000, len(huge)
        many = self.call("find_page", {f"extra_{n}": n for n in range(20_000)})
        assert len(many) < 2_000, len(many)
        assert "and 19990 more problems" in many
        glued = self.call("find_page", {"key" + AWS: 1})
        assert AWS not in glued, glued
        assert "a name that is not one of ours" in glued
        typo = self.call("find_page", {"pth": "topics/a.md"})
        assert "pth" in typo, typo  # a mistyped name is still said back: that is what helps

    def test_a_name_that_is_not_text_is_said_so_and_a_notification_has_no_body_type(self) -> None:
        for name in (None, {"a": 1}, 5):
            message = self.rpc("tools/call", {"name": name})["error"]["message"]
            assert message.startswith("params.name must be a string"), message
        notification = json.dumps({"jsonrpc": "2.0", "method": "notifications/x"})
        accepted = self.client.post("/api/mcp", data=notification, content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {self.token}")  # fmt: skip
        assert accepted.status_code == 202
        assert accepted.content == b""
        assert "Content-Type" not in accepted  # Django's default said text/html


class RestEchoTests(BrainTestCase):
    def setUp(self) -> None:
        self.api = Client(HTTP_AUTHORIZATION=f"Bearer {api_token_issue(actor=self.alice, name='t')[1]}")

    def test_unknown_names_in_the_body_and_the_query_are_named_only_when_they_read_as_names(self) -> None:
        body = self.api.post("/api/v1/memories", data=json.dumps({"content": "A note.", "key" + AWS: 1}),
                             content_type="application/json")  # fmt: skip
        assert body.status_code == 400
        assert AWS not in body.content.decode()
        query = self.api.get("/api/v1/search", {"query": "x", "x" * 50 + AWS: "1"})
        assert query.status_code == 400
        assert AWS[:8] not in query.content.decode()
        typo = self.api.get("/api/v1/search", {"qeury": "x"})
        assert "qeury" in typo.json()["error"]["message"]
        many = self.api.post("/api/v1/memories", data=json.dumps({f"extra_{n}": n for n in range(500)}),
                             content_type="application/json")  # fmt: skip
        assert len(many.json()["fields"]) == 11
