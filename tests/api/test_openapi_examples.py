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
