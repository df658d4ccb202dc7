"""Property-based conformance of REST v1 to its own OpenAPI document (schemathesis).

Every operation of the live schema is called with generated arguments, once with a valid
credential of each kind: no response may be a server error, and every response (refusals
included) must match the status codes, content types, headers and bodies the document
declares.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis import checks

from answers.credentials import question_credential_issue
from builds.services import build_credential_issue, build_open
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.tokens import api_token_issue
from tests.base import oauth_access_token, publish

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]
EXAMPLES = 12


@schemathesis.serializer("application/x-ndjson")
def json_lines(context: schemathesis.SerializationContext, value: Any) -> bytes:
    """The memory import's body: one JSON value a line (the document describes it as an array)."""
    items = value if isinstance(value, list) else [value]
    return "\n".join(json.dumps(item) for item in items).encode()


@pytest.fixture
def credentials(live_server: Any, transactional_db: Any, settings: Any) -> dict[str, str]:
    """A small world and one valid credential of each kind (rate windows out of the way)."""
    settings.BRAIN_MCP_RATE_LIMITS = dict.fromkeys(("read", "search", "write", "import", "upload", "ask"), 10**6)
    alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com", password="pw-alice-123")
    grant_issue(actor=SYSTEM, member=alice, path="topics/", permission="suggest")
    grant_issue(actor=SYSTEM, member=alice, path="captures/", permission="suggest")
    publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\nTeam plan: 12 EUR a seat.\n")
    build = build_open(actor=alice, title="Edits")
    return {
        "personal": api_token_issue(
            actor=alice, name="all", scopes=["memory", "corpus:read", "sources:write", "builds:write"]
        )[1],
        "oauth": oauth_access_token(
            alice.user, scope="corpus:read memory sources:write builds:write", resource_path="/api/v1"
        ),
        "question": question_credential_issue(actor=SYSTEM, name="bot", member=alice)[1],
        "build": build_credential_issue(actor=alice, build=build)[1],
    }


def test_every_operation_conforms_for_every_credential_kind(credentials: dict[str, str], live_server: Any) -> None:
    api = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/")
    failures: list[str] = []
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 30

    for operation in operations:

        @hypothesis_settings(
            max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        @given(case=operation.as_strategy())
        def conforms(case: Any) -> None:
            for token in credentials.values():
                case.call_and_validate(
                    base_url=live_server.url,
                    headers={"Authorization": f"Bearer {token}"},
                    checks=CHECKS,
                    timeout=40,  # await_answer may wait 25 s by design
                )

        try:
            conforms()
        except Exception as failure:
            failures.append(f"{operation.method.upper()} {operation.path}: {str(failure)[:1500]}")
    assert not failures, "\n\n".join(failures)
