"""The whole OAuth 2.1 flow, driven by the official ``mcp`` client against a live server.

Discovery (401 → RFC 9728 → RFC 8414), dynamic registration, PKCE S256, consent by an
active member through the real consent page, the token, and calls on ``/api/mcp``.
"""

from __future__ import annotations

import asyncio
import re
from hashlib import sha256
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import requests
from django.conf import settings
from django.test import LiveServerTestCase
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth2_provider.models import AccessToken, Application

from grants.models import AuditEvent, Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create, member_update
from oauth.config import provider_settings
from oauth.services import connection_revoke
from tests.base import DISCOUNT_POLICY, publish

READ_TOOLS = {
    "find_page", "read_page", "search", "read_figure", "page_relationships", "list_sources", "search_sources",
    "read_source",
}  # fmt: skip
REDIRECT_URI = "http://127.0.0.1:33418/callback"


class MemoryStorage:
    """The client's token and registration store (the mcp ``TokenStorage`` protocol)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """A signed-in person's browser: opens the consent page and clicks Connect."""

    def __init__(self, session_cookie: str, allow: list[str] | None = None) -> None:
        self.allow = allow  # the scopes the person leaves ticked (None: all the app asked for)
        self.http = requests.Session()
        self.http.cookies.set(settings.SESSION_COOKIE_NAME, session_cookie)
        self.consent_status: int | None = None
        self.result: AuthorizationCodeResult | None = None

    def authorize(self, url: str) -> None:
        page = self.http.get(url, allow_redirects=False, timeout=30)
        self.consent_status = page.status_code
        if page.status_code != 200:
            return
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
        fields = {name: unescape(value) for name, value in fields.items()}
        fields["allow"] = "Authorize"
        form: dict[str, Any] = dict(fields)
        ticked = re.findall(r'name="scope_choice" value="([^"]+)" checked', page.text)
        form["scope_choice"] = ticked if self.allow is None else self.allow
        answer = self.http.post(url, data=form, allow_redirects=False, timeout=30)
        assert answer.status_code == 302, answer.text[:500]
        query = parse_qs(urlsplit(answer.headers["Location"]).query)
        self.result = AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    async def redirect_handler(self, url: str) -> None:
        await asyncio.to_thread(self.authorize, url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError(f"consent was not given (consent page answered {self.consent_status})")
        return self.result


class OAuthFlowTests(LiveServerTestCase):
    def setUp(self) -> None:
        base = self.live_server_url
        override = self.settings(
            BRAIN_BASE_URL=base,
            OAUTH2_PROVIDER=provider_settings(base, ["http", "https"]),
            BRAIN_MCP_RATE_LIMITS={"register": 100_000, "token": 100_000},
        )
        override.enable()
        self.addCleanup(override.disable)
        self.alice = member_create(actor=SYSTEM, username="alice")
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="read")
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\n## Plans\n\nTeam plan.\n")
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted")  # hidden from alice
        self.url = f"{base}/api/mcp"

    def browser_for(self, member: Member, allow: list[str] | None = None) -> Browser:
        self.client.force_login(member.user)
        return Browser(self.client.cookies[settings.SESSION_COOKIE_NAME].value, allow=allow)

    def connect_and(self, browser: Browser, storage: MemoryStorage, work: Any, mode: str = "legacy") -> Any:
        metadata = OAuthClientMetadata(
            client_name="Test agent",
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        )
        auth = OAuthClientProvider(
            server_url=self.url,
            client_metadata=metadata,
            storage=storage,
            redirect_handler=browser.redirect_handler,
            callback_handler=browser.callback_handler,
        )

        async def session() -> Any:
            http = httpx2.AsyncClient(auth=auth, timeout=30)
            async with Client(streamable_http_client(self.url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
                return await work(client)

        return asyncio.run(session())

    def test_an_active_member_connects_an_agent_that_sees_the_nine_read_tools_under_their_grants(self) -> None:
        for mode in ("legacy", "auto"):
            with self.subTest(mode=mode):
                self.connect_in_mode(mode)

    def connect_in_mode(self, mode: str) -> None:
        storage = MemoryStorage()
        connects_before = AuditEvent.objects.filter(action="oauth.connect").count()

        async def work(client: Client) -> dict[str, Any]:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            page = await client.call_tool("read_page", {"path": "topics/pricing/price-list.md"})
            hidden = await client.call_tool("read_page", {"path": DISCOUNT_POLICY})
            missing = await client.call_tool("read_page", {"path": "topics/pricing/nope.md"})
            return {"tools": tools, "page": page, "hidden": hidden, "missing": missing}

        out = self.connect_and(self.browser_for(self.alice, allow=["corpus:read"]), storage, work, mode)
        assert out["tools"] == READ_TOOLS
        assert "Team plan." in out["page"].structured_content["body"]
        assert out["hidden"].is_error
        assert out["missing"].is_error
        assert out["hidden"].content[0].text == out["missing"].content[0].text
        assert storage.tokens is not None
        assert storage.tokens.refresh_token
        assert AuditEvent.objects.filter(action="oauth.connect", actor_id=self.alice.pk).count() == connects_before + 1
        # The token is bound to the MCP resource (RFC 8707) and is stored hashed, not in clear.
        issued = AccessToken.objects.get(token_checksum=sha256(storage.tokens.access_token.encode()).hexdigest())
        assert issued.resource == [self.url]
        assert issued.token == ""
        assert issued.user_id == self.alice.user_id

    def test_an_inactive_member_cannot_consent(self) -> None:
        browser = self.browser_for(self.alice)
        member_update(actor=SYSTEM, member=self.alice, role="member", is_active=False, slack_user_id=None)

        async def work(client: Client) -> Any:
            return await client.list_tools()

        failure: BaseException | None = None
        try:
            self.connect_and(browser, MemoryStorage(), work)
        except BaseException as exc:  # the client wraps the callback's error in task groups
            failure = exc
        assert failure is not None
        assert "consent was not given (consent page answered 403)" in repr(failure)
        assert browser.consent_status == 403
        assert browser.result is None

    def test_a_revoked_token_fails_on_its_next_request(self) -> None:
        storage = MemoryStorage()

        async def work(client: Client) -> int:
            return len((await client.list_tools()).tools)

        assert self.connect_and(self.browser_for(self.alice), storage, work) == 23  # both scopes: 9 reads + 14 memory
        assert storage.tokens is not None
        assert storage.client_info is not None
        token = storage.tokens.access_token

        def post() -> requests.Response:
            return requests.post(
                self.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )

        assert post().status_code == 200
        application = Application.objects.get(client_id=storage.client_info.client_id)
        connection_revoke(actor=self.alice, application_id=application.pk)
        refused = post()
        assert refused.status_code == 401
        assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
        assert "resource_metadata=" in refused.headers["WWW-Authenticate"]
