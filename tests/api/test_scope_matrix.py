"""Every credential kind on every REST v1 operation: exactly the allowed scope matrix.

The operations come from the URL conf and each view's own method table, so an endpoint
added tomorrow is covered the day it is added. The expectation for each (operation,
credential) pair is ``brain.callers.admits`` — and the matrix's key cells are also
spelled out by hand below, so the table itself is checked, not only its application.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import uuid
from typing import Any

from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value

from answers.credentials import question_credential_issue
from brain.callers import SURFACES, admits, resolve
from builds.services import build_credential_issue, build_open
from grants.principals import SYSTEM
from memory.tokens import api_token_issue
from tests.base import BrainTestCase

SCOPES = ("corpus:read", "memory", "sources:write", "builds:write")


def v1_operations() -> list[tuple[str, str, str]]:
    """(route, method, surface) of every REST v1 operation in the URL conf."""
    found: list[tuple[str, str, str]] = []

    def walk(resolver: URLResolver, prefix: str) -> None:
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                walk(entry, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern) and (prefix + str(entry.pattern)).startswith("api/v1/"):
                view = getattr(entry.callback, "view_class", None)
                route = prefix + str(entry.pattern)
                if view is None or route.startswith(("api/v1/schema", "api/v1/docs")):
                    continue
                operations = getattr(view, "operations", None)
                if operations:
                    found.extend((route, method, op.surface) for method, op in operations.items())
                else:
                    found.extend(
                        (route, method.upper(), view.surface) for method in ("get", "post", "patch", "delete")
                        if hasattr(view, method)
                    )  # fmt: skip

    walk(get_resolver(), "")
    return found


def concrete(route: str, build_id: str) -> str:
    url = "/" + route
    samples = {"path": "topics/x.md", "key": "notes/x", "id": str(uuid.uuid4()), "build_id": build_id,
               "question_id": "1"}  # fmt: skip
    while "<" in url:
        start = url.index("<")
        end = url.index(">", start)
        converter, _, name = url[start + 1 : end].rpartition(":")
        sample = samples.get(name, "x")
        url = url[:start] + (sample.replace("/", "-") if converter == "str" else sample) + url[end + 1 :]
    return url


class ScopeMatrixTests(BrainTestCase):
    def setUp(self) -> None:
        self.app = Application.objects.create(
            name="Agent", client_type="public", authorization_grant_type="authorization-code",
            redirect_uris="https://agent.example/cb",
        )  # fmt: skip
        self.build = build_open(actor=self.alice, title="Alice's edits")
        self.credentials: dict[str, str] = {}
        for scope in SCOPES:
            self.credentials[f"oauth {scope} for /api/v1"] = self.oauth(scope, "/api/v1")
            self.credentials[f"personal {scope}"] = api_token_issue(actor=self.alice, name=scope, scopes=[scope])[1]
        self.credentials["oauth all scopes for /api/mcp"] = self.oauth(" ".join(SCOPES), "/api/mcp")
        self.credentials["question"] = question_credential_issue(actor=SYSTEM, name="bot", member=self.alice)[1]
        self.credentials["build"] = build_credential_issue(actor=self.alice, build=self.build)[1]

    def oauth(self, scope: str, resource: str) -> str:
        raw = secrets.token_urlsafe(32)
        token = AccessToken(
            user=self.alice.user, application=self.app, scope=scope, resource=[settings.BRAIN_BASE_URL + resource],
            expires=timezone.now() + dt.timedelta(hours=1),
        )  # fmt: skip
        set_token_value(token, raw)
        token.save()
        return raw

    def call(self, method: str, url: str, raw: str | None) -> Any:
        headers: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {raw}"} if raw else {}
        client = Client()
        if method in ("GET", "DELETE"):
            return getattr(client, method.lower())(url, **headers)
        return getattr(client, method.lower())(url, data=json.dumps({}), content_type="application/json", **headers)

    @staticmethod
    def refused_for_credential(response: Any) -> bool:
        if response.status_code == 401:
            return True
        return bool(response.status_code == 403 and response.json()["error"]["code"] == "insufficient_scope")

    def test_the_operations_are_found(self) -> None:
        operations = v1_operations()
        assert len(operations) >= 25
        assert {surface for _, _, surface in operations} <= set(SURFACES)

    def test_each_credential_reaches_exactly_what_its_kind_and_scope_allow(self) -> None:
        for route, method, surface in v1_operations():
            url = concrete(route, str(self.build.public_id))
            with self.subTest(route=route, method=method, credential="none"):
                assert self.call(method, url, None).status_code == 401
            for label, raw in self.credentials.items():
                caller = resolve(raw)
                assert caller is not None, label
                allowed = admits(SURFACES[surface], caller)
                with self.subTest(route=route, method=method, credential=label):
                    response = self.call(method, url, raw)
                    assert response.status_code < 500, response.content[:300]
                    assert self.refused_for_credential(response) == (not allowed), (
                        response.status_code, response.content[:300]
                    )  # fmt: skip

    def test_the_key_cells_of_the_matrix(self) -> None:
        """Spelled out by hand: the table says what the issue promises."""

        def reaches(credential: str, method: str, url: str) -> bool:
            return not self.refused_for_credential(self.call(method, url, self.credentials[credential]))

        build = f"/api/v1/builds/{self.build.public_id}"
        # A memory-only token reaches memories and nothing that writes sources or reads pages.
        assert reaches("personal memory", "GET", "/api/v1/memories")
        assert not reaches("personal memory", "POST", "/api/v1/sources/notes/x/tags")
        assert not reaches("personal memory", "GET", "/api/v1/pages/topics/x.md")
        assert not reaches("oauth memory for /api/v1", "POST", "/api/v1/sources/notes/x/tags")
        # A question credential reaches only ask and await.
        assert reaches("question", "POST", "/api/v1/questions")
        assert reaches("question", "GET", "/api/v1/questions/1")
        for method, url in (("GET", "/api/v1/pages"), ("GET", "/api/v1/search"), ("GET", "/api/v1/memories"),
                            ("POST", "/api/v1/builds"), ("GET", build)):  # fmt: skip
            assert not reaches("question", method, url), url
        # A build credential reads and sees its own build, but opens none and touches no memory.
        assert reaches("build", "GET", "/api/v1/pages")
        assert reaches("build", "GET", build)
        assert not reaches("build", "POST", "/api/v1/builds")
        assert not reaches("build", "GET", "/api/v1/memories")
        # An OAuth token bound to the MCP resource is not a REST token, whatever its scopes.
        assert not reaches("oauth all scopes for /api/mcp", "GET", "/api/v1/pages")
        # ... and the refusal names the resource it needs, not a scope the token already holds.
        refused = self.call("GET", "/api/v1/pages", self.credentials["oauth all scopes for /api/mcp"])
        message = refused.json()["error"]["message"]
        assert "issued for another resource" in message
        assert message.endswith(f"{settings.BRAIN_BASE_URL}/api/v1.")


# Each MCP tool a person or a build reaches, and the REST surface doing the same thing: the
# tool must ask no less of its caller. A tool added tomorrow without a row here fails below.
TOOL_SURFACES = {
    **dict.fromkeys(("find_page", "read_page", "page_relationships"), "pages.read"),
    "search": "search",
    "read_figure": "figures.read",
    **dict.fromkeys(("list_sources", "search_sources", "read_source"), "sources.read"),
    "tag_source": "sources.write",
    **dict.fromkeys(
        (
            "remember",
            "append",
            "update",
            "recall",
            "list_recent",
            "list_teams",
            "get",
            "forget",
            "set_status",
            "link",
            "unlink",
            "connections",
            "share",
            "get_prompt_capsule",
        ),
        "memory",
    ),
    **dict.fromkeys(("ask", "await_answer"), "questions"),
    # The build's own branch, on its own endpoint.
    **dict.fromkeys(
        (
            "read_branch",
            "read_draft",
            "write_page",
            "delete_page",
            "move_page",
            "record_capture",
            "record_figure",
            "link_pages",
            "unlink_pages",
            "diff_page",
            "validate_page",
            "submit_for_review",
        ),
        "mcp.build",
    ),
}


class ToolSurfaceTests(BrainTestCase):
    def test_every_mcp_tool_asks_what_its_rest_twin_asks(self) -> None:
        from mcp_api.tools import CATALOGUE

        unmapped = sorted(tool.name for tool in CATALOGUE if tool.name not in TOOL_SURFACES)
        assert not unmapped, f"map these tools to the REST surface doing the same: {unmapped}"
        for tool in CATALOGUE:
            surface = SURFACES[TOOL_SURFACES[tool.name]]
            with self.subTest(tool=tool.name):
                # Every kind that may call the tool may use the REST twin (mcp.person admits
                # people and question credentials at the endpoint; the twin decides the rest).
                assert tool.kinds <= surface.kinds, (tool.name, sorted(tool.kinds - surface.kinds))
                if "person" in tool.kinds and surface.scope is not None:
                    assert tool.scopes == {surface.scope}, (tool.name, sorted(tool.scopes), surface.scope)
                if "person" in tool.kinds and not tool.read_only:  # a person's read-only token writes nothing
                    assert tool.scopes != {"corpus:read"} or surface.scope == "corpus:read", tool.name
