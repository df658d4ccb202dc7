"""Every legacy API accepts exactly the credentials its surface in ``brain.callers`` admits.

The routes come from the URL conf; every kind of credential is tried on every one.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import uuid
from typing import Any

from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value

from brain.callers import SURFACES, admits, resolve
from memory.tokens import api_token_issue
from oauth.audience import is_rest_v1, surface_for
from oauth.config import MCP_PATH, MEMORY_API_PATH, provider_settings
from tests.base import BrainTestCase

BASE = "https://brain.example.org"


def api_routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    resolver = resolver or get_resolver()
    found: list[str] = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            found += api_routes(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            route = prefix + str(entry.pattern)
            if route.startswith(("api/", "prompt-capsules/")):
                found.append(route)
    return found


def concrete(route: str) -> str:
    url = "/" + route
    for converter, sample in (("str", "x"), ("path", "notes/x"), ("int", "1"), ("uuid", str(uuid.uuid4()))):
        while f"<{converter}:" in url:
            start = url.index(f"<{converter}:")
            url = url[:start] + sample + url[url.index(">", start) + 1 :]
    return url


def refused(response: Any) -> bool:
    """401 (no live credential) or 403 ``insufficient_scope`` (a live one this surface does not admit)."""
    if response.status_code == 401:
        return True
    return bool(response.status_code == 403 and response.json().get("error", {}).get("code") == "insufficient_scope")


@override_settings(BRAIN_BASE_URL=BASE, OAUTH2_PROVIDER=provider_settings(BASE, ["https"]))
class AudienceTests(BrainTestCase):
    def setUp(self) -> None:
        self.app = Application.objects.create(
            name="Agent", client_type="public", authorization_grant_type="authorization-code",
            redirect_uris="https://agent.example/cb",
        )  # fmt: skip

    def oauth(self, scope: str, resource: str) -> str:
        raw = secrets.token_urlsafe(32)
        token = AccessToken(
            user=self.alice.user, application=self.app, scope=scope, resource=[BASE + resource],
            expires=timezone.now() + dt.timedelta(hours=1),
        )  # fmt: skip
        set_token_value(token, raw)
        token.save()
        return raw

    def authenticated(self, url: str, token: str) -> bool:
        headers: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        response: Any = self.client.get(url, **headers)
        if response.status_code == 405:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            response = self.client.post(url, data=body, content_type="application/json", **headers)
        return not refused(response)

    def test_every_api_route_has_a_row(self) -> None:
        routes = api_routes()
        assert len(routes) >= 15
        for route in routes:
            url = concrete(route)
            assert is_rest_v1(url) or surface_for(url) in SURFACES, route

    def test_each_credential_is_accepted_exactly_where_its_row_allows(self) -> None:
        personal = api_token_issue(actor=self.alice, name="cli")[1]
        tokens = {
            ("memory", MEMORY_API_PATH): self.oauth("memory", MEMORY_API_PATH),
            ("memory", MCP_PATH): self.oauth("memory", MCP_PATH),
            ("corpus:read", MCP_PATH): self.oauth("corpus:read", MCP_PATH),
            ("corpus:read", MEMORY_API_PATH): self.oauth("corpus:read", MEMORY_API_PATH),
            ("corpus:read memory", MCP_PATH): self.oauth("corpus:read memory", MCP_PATH),
        }
        for route in api_routes():
            url = concrete(route)
            if is_rest_v1(url):
                continue  # tests/brain/test_scope_matrix.py
            surface = SURFACES[str(surface_for(url))]
            for label, raw in [("personal", personal), *((f"{s} for {r}", t) for (s, r), t in tokens.items())]:
                caller = resolve(raw)
                assert caller is not None
                with self.subTest(url=url, credential=label):
                    assert self.authenticated(url, raw) == admits(surface, caller)

    def test_a_memory_token_no_longer_reaches_the_sources_api(self) -> None:
        token = self.oauth("memory", MEMORY_API_PATH)
        response = self.client.get("/api/sources/notes/x", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "insufficient_scope"
        assert SURFACES["sources.legacy"].resource is None

    def test_a_live_token_without_the_scope_is_403_and_a_dead_one_401(self) -> None:
        """RFC 6750 §3.1: a client told 401 signs in again; told insufficient_scope, it asks for the scope."""
        live = self.oauth("corpus:read", MEMORY_API_PATH)
        personal = api_token_issue(actor=self.alice, name="read only", scopes=["corpus:read"])[1]
        for raw in (live, personal):
            for url in ("/api/memory/entries", "/prompt-capsules/core", "/api/sources/notes/x"):
                with self.subTest(url=url, token=raw[:4]):
                    response: Any = self.client.get(url, HTTP_AUTHORIZATION=f"Bearer {raw}")
                    assert response.status_code == 403
                    assert response.json()["error"]["code"] == "insufficient_scope"
                    assert 'error="insufficient_scope"' in response["WWW-Authenticate"]
        headers: list[dict[str, Any]] = [
            {},
            {"HTTP_AUTHORIZATION": "Bearer not-a-token"},
            {"HTTP_AUTHORIZATION": "Basic eDp5"},
        ]
        for header in headers:
            response = self.client.get("/api/memory/entries", **header)
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "unauthenticated"
            assert response["WWW-Authenticate"].startswith("Bearer")
