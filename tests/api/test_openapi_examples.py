"""Every request example in the OpenAPI document is a request the server accepts: the whole
document, so an example added tomorrow is checked the day it is written."""

from __future__ import annotations

from typing import Any

import jsonschema
import yaml
from django.test import Client

from grants.principals import SYSTEM
from grants.services import member_create
from memory.tokens import api_token_issue


def test_every_request_example_validates_against_its_operations_body_schema(db: Any) -> None:
    member = member_create(actor=SYSTEM, username="reader")
    token = api_token_issue(actor=member, name="schema")[1]
    document = yaml.safe_load(Client().get("/api/v1/schema/", HTTP_AUTHORIZATION=f"Bearer {token}").content)
    checked: list[str] = []
    wrong: list[str] = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            for example in content.get("examples", {}).values():
                schema = {**content["schema"], "components": document["components"]}
                try:
                    jsonschema.validate(example["value"], schema, cls=jsonschema.Draft202012Validator)
                except jsonschema.ValidationError as error:
                    wrong.append(f"{method.upper()} {path}: {error.message}")
                checked.append(f"{method.upper()} {path}")
    assert len(checked) >= 8, checked
    assert wrong == []


def test_every_operation_that_takes_a_body_describes_it(db: Any) -> None:
    """Uploads, build imports and memory imports had no requestBody: a client generated from the
    document could not call them."""
    member = member_create(actor=SYSTEM, username="reader")
    token = api_token_issue(actor=member, name="schema")[1]
    document = yaml.safe_load(Client().get("/api/v1/schema/", HTTP_AUTHORIZATION=f"Bearer {token}").content)
    bodiless = [
        f"{method.upper()} {path}"
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
        if method in ("post", "put", "patch") and not operation.get("requestBody", {}).get("content")
    ]
    assert bodiless == [] or all(_takes_no_body(entry) for entry in bodiless), bodiless


def _takes_no_body(entry: str) -> bool:
    """Operations whose POST carries nothing (submitting a build, say)."""
    return entry.endswith(("/submit",))


def test_every_component_names_one_model(db: Any) -> None:
    """Two pydantic models named ``StatusOut`` (a source's status, a build's) were one component:
    the source status endpoint was documented with the build's schema, which its answers fail."""
    from pydantic import BaseModel

    member = member_create(actor=SYSTEM, username="reader")
    token = api_token_issue(actor=member, name="schema")[1]
    document = yaml.safe_load(Client().get("/api/v1/schema/", HTTP_AUTHORIZATION=f"Bearer {token}").content)
    ours: dict[str, set[str]] = {}
    stack: list[type[BaseModel]] = [BaseModel]
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        module = model.__module__
        if module.split(".")[0] in {"api", "mcp_api", "memory", "corpus", "builds", "answers", "ingest", "grants"}:
            ours.setdefault(model.__name__, set()).add(f"{module}.{model.__qualname__}")
    shared = {name: sorted(ours[name]) for name in document["components"]["schemas"] if len(ours.get(name, ())) > 1}
    assert shared == {}


def test_every_query_parameter_bound_the_document_publishes_is_the_one_the_server_checks(db: Any) -> None:
    """Query parameters were published as a bare type: k=51 and topK=21 were valid by the document
    and a 400 from the server. Every published bound is tried on both sides, on every GET without
    path parameters."""
    member = member_create(actor=SYSTEM, username="reader")
    scopes = ["memory", "corpus:read", "sources:write", "builds:write"]
    token = api_token_issue(actor=member, name="schema", scopes=scopes)[1]
    client = Client()
    document = yaml.safe_load(client.get("/api/v1/schema/", HTTP_AUTHORIZATION=f"Bearer {token}").content)
    tried: list[str] = []
    wrong: list[str] = []
    for path, methods in document["paths"].items():
        operation = methods.get("get")
        if operation is None or "{" in path:
            continue
        parameters = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        base = {p["name"]: "pricing" for p in parameters if p.get("required")}
        for parameter in parameters:
            schema, name = parameter["schema"], parameter["name"]
            sides: list[tuple[Any, bool]] = []  # (value, refused?)
            if "maximum" in schema:
                sides += [(schema["maximum"], False), (schema["maximum"] + 1, True)]
            if "minimum" in schema:
                sides += [(schema["minimum"], False), (schema["minimum"] - 1, True)]
            if "maxLength" in schema:
                sides += [("a" * schema["maxLength"], False), ("a" * (schema["maxLength"] + 1), True)]
            if "enum" in schema:
                sides += [(schema["enum"][0], False), ("no-such-value", True)]
            for value, refused in sides:
                answer = client.get(path, {**base, name: value}, HTTP_AUTHORIZATION=f"Bearer {token}")
                tried.append(f"{path} {name}={str(value)[:12]}")
                if (answer.status_code == 400) != refused:
                    wrong.append(f"GET {path}?{name}={str(value)[:20]}: {answer.status_code}")
    assert len(tried) >= 20, tried
    assert wrong == []
