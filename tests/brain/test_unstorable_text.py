"""Text no database can store is refused by name on every JSON surface, never a 500.

A JSON string may spell a lone UTF-16 surrogate (``"\\ud800"``): valid JSON, but no character,
and UTF-8 cannot encode it — the database driver raised on it, a 500 on most text fields.
Surfaces are enumerated: every REST v1 operation that takes a JSON body and each property its
OpenAPI document declares; every MCP tool of both endpoints and each argument of its input
schema; the memory API's capture and import.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.test import override_settings

from builds.services import build_credential_issue, build_open
from mcp_api.tools import CATALOGUE
from memory.services import memory_remember
from memory.tokens import api_token_issue
from tests.base import BrainTestCase, ErrorRecords, oauth_access_token, publish

UNSTORABLE = ["a\ud800", "\udfff", "ok \udbff\udbff end", "a\x00b"]


def _refusal_names_it(message: str) -> bool:
    return "surrogate" in message or "NUL" in message


@override_settings(BRAIN_MCP_RATE_LIMITS=dict.fromkeys(("read", "search", "write", "import", "upload", "ask"), 10**6))
class UnstorableTextTests(BrainTestCase):
    def setUp(self) -> None:
        publish("topics/pricing/price-list.md", title="Price list")
        self.memory = memory_remember(actor=self.alice, content="We ship on Thursdays.").memory
        self.personal = api_token_issue(
            actor=self.alice, name="all", scopes=["memory", "corpus:read", "sources:write", "builds:write"]
        )[1]
        self.errors = ErrorRecords()
        logging.getLogger().addHandler(self.errors)
        self.client.raise_request_exception = False

    def tearDown(self) -> None:
        logging.getLogger().removeHandler(self.errors)

    def oauth(self, resource: str) -> str:
        return oauth_access_token(
            self.alice.user, scope="corpus:read memory sources:write builds:write", resource_path=resource
        )

    # ------------------------------------------------------------------ REST v1

    def json_operations(self) -> list[tuple[str, str, list[str]]]:
        """(method, path, body properties) of every REST v1 operation taking a JSON body."""
        document = self.client.get("/api/v1/schema/", {"format": "json"}, HTTP_ACCEPT="application/json").json()
        components = document.get("components", {}).get("schemas", {})

        def properties(schema: dict[str, Any]) -> list[str]:
            if "$ref" in schema:
                return properties(components[schema["$ref"].rsplit("/", 1)[-1]])
            found = list(schema.get("properties", {}))
            for part in schema.get("allOf", []) + schema.get("oneOf", []) + schema.get("anyOf", []):
                found += properties(part)
            return found

        operations = []
        for path, methods in document["paths"].items():
            for method, operation in methods.items():
                body = operation.get("requestBody", {}).get("content", {}).get("application/json")
                if body is not None:
                    operations.append((method.upper(), path, properties(body.get("schema", {})) or ["content"]))
        return operations

    def test_every_rest_v1_json_property_refuses_unstorable_text_by_name(self) -> None:
        token = self.oauth("/api/v1")
        operations = self.json_operations()
        assert len(operations) >= 10, operations
        named = 0
        for method, template, fields in operations:
            path = template.replace("{id}", str(self.memory.pk)).replace("{key}", "notes/x")
            path = path.replace("{path}", "topics/pricing/price-list.md").replace("{public_id}", "x")
            for field in fields:
                for text in UNSTORABLE:
                    for value in (text, [text]):
                        body = json.dumps({field: value})
                        response = self.client.generic(method, path, data=body, content_type="application/json",
                                                       HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
                        with self.subTest(operation=f"{method} {template}", field=field, value=repr(value)):
                            assert response.status_code < 500, response.content[:300]
                            if response.status_code == 400:
                                named += _refusal_names_it(response.json()["error"]["message"])
        assert named >= len(operations), named  # each operation refused at least one by name
        assert self.errors.records == [], [record.getMessage() for record in self.errors.records]

    def test_the_memory_api_capture_and_import_refuse_it_by_name(self) -> None:
        auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {self.personal}"}
        answer = self.client.post("/api/memory/capture", data=json.dumps({"content": "a\ud800"}),
                                  content_type="application/json", **auth)  # fmt: skip
        assert answer.status_code == 400
        assert "surrogate" in answer.json()["error"]["message"]
        lines = "\n".join(json.dumps({"content": text}) for text in ("fine", "a\ud800", "tag me")) + "\n"
        answer = self.client.post("/api/v1/memories/import", data=lines, content_type="application/x-ndjson", **auth)
        assert answer.status_code < 500, answer.content[:300]
        assert self.errors.records == []

    # ------------------------------------------------------------------ MCP

    def call(self, url: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = self.client.post(url, data=json.dumps(body), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert response.status_code < 500, (name, response.content[:300])
        return dict(response.json())

    def test_every_mcp_tool_argument_refuses_unstorable_text_by_name(self) -> None:
        build = build_open(actor=self.alice, title="Edits")
        endpoints = [
            ("/api/build/mcp", build_credential_issue(actor=self.alice, build=build)[1], "build"),
            ("/api/mcp", self.oauth("/api/mcp"), "person"),
        ]
        tried = 0
        for url, token, kind in endpoints:
            for tool in (tool for tool in CATALOGUE if kind in tool.kinds):
                for field in tool.input_model.model_json_schema().get("properties", {}):
                    for text in UNSTORABLE:
                        with self.subTest(tool=tool.name, field=field, value=repr(text)):
                            answer = self.call(url, token, tool.name, {field: text})
                            tried += 1
                            assert "error" in answer, answer
                            assert answer["error"]["code"] == -32602, answer
                            assert _refusal_names_it(answer["error"]["message"]), answer
                            assert "codec" not in answer["error"]["message"]
        assert tried > 100
        assert self.errors.records == [], [record.getMessage() for record in self.errors.records]


def test_a_long_key_over_a_long_list_costs_memory_by_the_body_not_by_its_product() -> None:
    """Locations are built only for a refusal: every child's full location written up front
    repeated a 30,000-character key for each of 15,000 items (a 60 KB body: 452 MB)."""
    import tracemalloc

    from brain.inputs import InputRefused, parse_json

    body = json.dumps({"k" * 30_000: [0] * 15_000})
    tracemalloc.start()
    try:
        parse_json(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000
    refused = json.dumps({"k" * 30_000: [0, "a\x00b"]})
    with pytest.raises(InputRefused) as caught:
        parse_json(refused)
    message = str(caught.value)
    assert message.startswith("the body.kkk")
    assert message.endswith("… contains a NUL character")
    assert len(message) < 260
    with pytest.raises(InputRefused, match=r"^the body\.a\.b\[1\] contains a NUL character$"):
        parse_json('{"a": {"b": [1, "x\\u0000"]}}')
