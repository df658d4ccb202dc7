"""Every tool's arguments are the JSON types its inputSchema names, or refused by name.

Enumerated from the catalogue, so a tool added tomorrow is covered: each integer, number and
boolean property is sent as each wrong JSON type (lax validation once took ``k: true`` as 1 and
``"5"`` as 5), and a date is still accepted as ISO text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import SimpleTestCase
from pydantic import ValidationError

from mcp_api.dispatch import tool_arguments
from mcp_api.tools import CATALOGUE
from tests.base import BrainTestCase

WRONG: dict[str, list[Any]] = {
    "integer": [True, "5", 5.5, [5]],
    "number": [True, "5.5", [5]],
    "boolean": [1, "true", "yes", None],
    "string": [5, True, ["x"], {"x": 1}],
}


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a property's schema admits (``anyOf`` of a type and null included)."""
    if "type" in schema:
        kinds = schema["type"]
        return set(kinds) if isinstance(kinds, list) else {kinds}
    return {kind for option in schema.get("anyOf", []) for kind in _types(option)}


class StrictArgumentTests(SimpleTestCase):
    def test_each_scalar_property_refuses_every_other_json_type_by_name(self) -> None:
        checked = 0
        for tool in CATALOGUE:
            for field, schema in tool.input_model.model_json_schema().get("properties", {}).items():
                admitted = _types(schema)
                for kind in admitted & set(WRONG):
                    for value in WRONG[kind]:
                        if (value is None and "null" in admitted) or (
                            isinstance(value, bool) is False and isinstance(value, int) and "number" in admitted
                        ):
                            continue
                        with self.subTest(tool=tool.name, field=field, value=value):
                            with pytest.raises(ValidationError) as refused:
                                tool_arguments(tool, {field: value})
                            named = {item["loc"][0] for item in refused.value.errors() if item["loc"]}
                            assert field in named, (tool.name, field, value, refused.value.errors())
                            checked += 1
        assert checked > 30  # the catalogue has scalars to check: this test is not vacuous

    def test_json_forms_of_richer_types_still_pass(self) -> None:
        tool = next(tool for tool in CATALOGUE if tool.name == "record_figure")
        args = tool_arguments(tool, {"page_path": "topics/a.md", "key": "k", "value": "12", "as_of": "2026-01-01"})
        assert str(getattr(args, "as_of", "")) == "2026-01-01"


class StrictArgumentsOverHttpTests(BrainTestCase):
    def test_a_boolean_for_search_k_is_refused_naming_k(self) -> None:
        from builds.services import build_credential_issue, build_open

        build = build_open(actor=self.alice, title="Strict")
        _, token = build_credential_issue(actor=self.alice, build=build)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "price", "k": True}}}  # fmt: skip
        response = self.client.post("/api/build/mcp", data=json.dumps(body), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        result = response.json()["result"]
        assert result["isError"] is True
        assert "k:" in result["content"][0]["text"]


class PublishedBoundsTests(SimpleTestCase):
    def test_the_bounds_the_services_enforce_are_in_the_schemas(self) -> None:
        """A client (or a schema-driven fuzzer) read no length for a memory or a question, though
        the server refuses a blank one and one past 20,000 / 1,000 characters."""
        from answers.services import MAX_QUESTION
        from memory.services import MAX_CONTENT

        tools = {tool.name: tool.input_model.model_json_schema()["properties"] for tool in CATALOGUE}
        for name, field, most in (("remember", "content", MAX_CONTENT), ("append", "text", MAX_CONTENT),
                                  ("update", "content", MAX_CONTENT), ("ask", "question", MAX_QUESTION)):  # fmt: skip
            with self.subTest(tool=name):
                assert tools[name][field]["maxLength"] == most
                assert tools[name][field]["minLength"] == 1
