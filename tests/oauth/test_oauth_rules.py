"""OAuth 2.1 rules one by one: discovery, registration, PKCE S256 only, the resource
binding, tokens only in the header, scopes as a projection, refresh rotation, and
disconnecting from the Connected apps page and the admin."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import secrets
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, urlencode, urlsplit

from django.db import transaction
from django.test import Client, TestCase, override_settings
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken
from oauth2_provider.views import TokenView

from grants.models import AuditEvent, Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from oauth.config import provider_settings
from tests.base import start_of_fresh_rate_window

BASE = "https://brain.example.org"
MCP = f"{BASE}/api/mcp"
REDIRECT = "http://127.0.0.1:40123/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@override_settings(
    BRAIN_BASE_URL=BASE,
    OAUTH2_PROVIDER=provider_settings(BASE, ["http", "https"]),
    BRAIN_MCP_RATE_LIMITS={"register": 100_000, "token": 100_000},  # every test registers; each cap has its own test
)
class OAuthRuleTests(TestCase):
    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice")
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="read")

    # ----------------------------------------------------------------- helpers

    def register(self, **metadata: Any) -> dict[str, Any]:
        body = {"client_name": "Agent", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}
        response = self.client.post("/oauth/register/", data=json.dumps(body), content_type="application/json")
        assert response.status_code == 201, response.content
        return dict(response.json())

    def test_a_query_string_that_is_not_url_encoding_is_a_bad_request(self) -> None:
        client_id = self.register()["client_id"]
        for tail in ("&x=%zz", "&x=%%%", "&state=%e%"):
            query = f"/oauth/authorize/?response_type=code&client_id={client_id}{tail}"
            self.client.logout()
            assert self.client.get(query).status_code == 400  # signed out too: no sign-in detour to a 500
            self.client.force_login(self.alice.user)
            for answer in (self.client.get(query), self.client.post(query, {"allow": "Authorize"})):
                assert answer.status_code == 400
                assert "not valid URL encoding" in answer.content.decode()

    def test_client_metadata_holding_a_secret_is_refused_on_register_and_update(self) -> None:
        key = "AKIA" + "QYLPMN5HHHFPZAM2"
        body = {"client_name": f"Agent {key}", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
        response = self.client.post("/oauth/register/", data=json.dumps(body), content_type="application/json")
        assert response.status_code == 400
        assert response.json()["error"] == "invalid_client_metadata"
        assert "client_name refused" in response.json()["error_description"]
        assert key[4:] not in response.content.decode()
        assert not Application.objects.filter(name__contains=key[4:]).exists()
        client = self.register()
        update = {**body, "client_id": client["client_id"]}
        response = self.client.put(
            client["registration_client_uri"].replace(BASE, ""), data=json.dumps(update),
            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {client['registration_access_token']}",
        )  # fmt: skip
        assert response.status_code == 400
        assert not Application.objects.filter(name__contains=key[4:]).exists()

    def authorize(self, client_id: str, **params: str) -> Any:
        self.client.force_login(self.alice.user)
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s1", **params}
        consent = self.client.get("/oauth/authorize/?" + urlencode(query))
        if consent.status_code != 200 or "form" not in consent.context or consent.context["form"] is None:
            return consent
        fields = {name: value for name, value in consent.context["form"].initial.items() if value is not None}
        return self.client.post("/oauth/authorize/?" + urlencode(query), data={**fields, "allow": "Authorize"})

    def code_for(self, client_id: str, challenge: str, **params: str) -> str:
        answer = self.authorize(client_id, code_challenge=challenge, code_challenge_method="S256", **params)
        assert answer.status_code == 302, answer.content[:300]
        query = parse_qs(urlsplit(answer["Location"]).query)
        assert "code" in query, answer["Location"]
        return str(query["code"][0])

    def token(self, **data: str) -> Any:
        return self.client.post("/oauth/token/", data=data)

    def connect(self, scope: str = "corpus:read") -> dict[str, Any]:
        client = self.register()
        verifier, challenge = pkce()
        code = self.code_for(client["client_id"], challenge, scope=scope, resource=MCP)
        response = self.token(
            grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client["client_id"],
            code_verifier=verifier, resource=MCP,
        )  # fmt: skip
        assert response.status_code == 200, response.content
        return {**response.json(), "client_id": client["client_id"]}

    def mcp(self, token: str | None, method: str = "tools/list", path: str = "/api/mcp") -> Any:
        headers: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method})
        return self.client.post(path, data=body, content_type="application/json", **headers)

    # ----------------------------------------------------------------- discovery

    def test_authorization_server_metadata_names_this_deploy_as_issuer_and_offers_only_s256(self) -> None:
        document = self.client.get("/.well-known/oauth-authorization-server").json()
        assert document["issuer"] == BASE
        assert document["authorization_endpoint"] == f"{BASE}/oauth/authorize/"
        assert document["token_endpoint"] == f"{BASE}/oauth/token/"
        assert document["registration_endpoint"] == f"{BASE}/oauth/register/"
        assert document["code_challenge_methods_supported"] == ["S256"]
        assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
        assert document["response_types_supported"] == ["code"]
        assert document["scopes_supported"] == ["builds:write", "corpus:read", "memory", "sources:write"]
        assert "none" in document["token_endpoint_auth_methods_supported"]

    def test_protected_resource_metadata_covers_the_mcp_endpoint_at_both_locations(self) -> None:
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/api/mcp"):
            document = self.client.get(path).json()
            assert document["resource"] == MCP
            assert document["authorization_servers"] == [BASE]
            # What MCP's tools use: builds:write is for /api/v1 and useless on a token for /api/mcp.
            assert document["scopes_supported"] == ["corpus:read", "memory", "sources:write"]
            assert document["bearer_methods_supported"] == ["header"]

    def test_401_points_the_client_at_the_resource_metadata(self) -> None:
        response = self.mcp(None)
        assert response.status_code == 401
        challenge = response["WWW-Authenticate"]
        assert challenge == f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource/api/mcp"'
        assert response["MCP-Protocol-Version"] == "2025-06-18"
        assert "error=" in self.mcp("not-a-token")["WWW-Authenticate"]

    def test_the_transport_rules_hold_on_the_person_endpoint_before_any_credential(self) -> None:
        issued = self.connect()
        got = self.client.get("/api/mcp")
        assert got.status_code == 405
        assert got["Allow"] == "POST"
        newer = self.client.post("/api/mcp", data="{}", content_type="application/json",
                                 HTTP_MCP_PROTOCOL_VERSION="2099-01-01")  # fmt: skip
        assert newer.status_code == 400
        assert newer.json()["error"]["data"]["supported"] == ["2025-11-25", "2025-06-18", "2025-03-26"]
        bearer = f"Bearer {issued['access_token']}"
        foreign = self.client.post("/api/mcp", data="{}", content_type="application/json",
                                   HTTP_ORIGIN="https://evil.example", HTTP_AUTHORIZATION=bearer)  # fmt: skip
        assert foreign.status_code == 403
        for version in ("2025-11-25", "2025-06-18", "2025-03-26"):
            answer = self.client.post(
                "/api/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
                content_type="application/json", HTTP_MCP_PROTOCOL_VERSION=version,
                HTTP_AUTHORIZATION=f"Bearer {issued['access_token']}",
            )  # fmt: skip
            assert answer.status_code == 200
            assert answer["MCP-Protocol-Version"] == version

    def test_the_transport_answers_edges_by_the_spec(self) -> None:
        issued = self.connect()
        bearer: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {issued['access_token']}"}

        def post(message: Any, **extra: Any) -> Any:
            return self.client.post("/api/mcp", data=json.dumps(message), content_type="application/json",
                                    **bearer, **extra)  # fmt: skip

        # An unknown tool's name is echoed short, and such calls count in the read window (first:
        # every method counts in it, so the calls below would fill it).
        long_name = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x" * 100_000}}
        start_of_fresh_rate_window()
        with self.settings(BRAIN_MCP_RATE_LIMITS={"read": 2}):
            unknown = [post(long_name) for _ in range(3)]
        assert [answer.status_code for answer in unknown] == [200, 200, 429]
        assert len(unknown[0].content) < 1_000
        assert unknown[0].json()["error"]["message"].startswith("Unknown tool: xxx")
        for bad_id in ({"a": [1]}, [1, 2]):  # an object or a list is never echoed as the id
            for message in ({"id": bad_id, "method": "ping"}, {"jsonrpc": "2.0", "id": bad_id, "method": "ping"}):
                answer = post(message)
                assert answer.json()["id"] is None
        # The version agreed on initialize is the header's too.
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
        agreed = post(initialize)
        assert agreed.json()["result"]["protocolVersion"] == "2025-11-25"
        assert agreed["MCP-Protocol-Version"] == "2025-11-25"
        negative = post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, CONTENT_LENGTH="-1")
        assert negative.status_code == 400
        assert "Content-Length" in negative.json()["error"]["message"]
        # Batches: MCP 2025-03-26 (whose clients send no version header) has them; later versions do not.
        ping = {"jsonrpc": "2.0", "id": "a", "method": "ping"}
        batch = post([ping, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**ping, "id": 7}])
        assert batch.status_code == 200
        assert [answer["id"] for answer in batch.json()] == ["a", 7]
        assert post([{"jsonrpc": "2.0", "method": "notifications/initialized"}]).status_code == 202
        for refused, extra in (([], {}), ([ping] * 21, {}), ([ping], {"HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"})):
            answer = post(refused, **extra)
            assert answer.status_code == 400, (len(refused), extra)
            assert answer.json()["error"]["code"] == -32600
        # The build endpoint's challenge carries no error code when no credential was sent.
        none = self.client.post("/api/build/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
                                content_type="application/json")  # fmt: skip
        assert none.status_code == 401
        assert "error=" not in none["WWW-Authenticate"]

    def test_hostile_envelopes_cost_neither_a_500_nor_unbounded_work(self) -> None:
        issued = self.connect()
        bearer: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {issued['access_token']}"}

        def post(message: Any, **extra: Any) -> Any:
            return self.client.post("/api/mcp", data=json.dumps(message), content_type="application/json",
                                    **bearer, **extra)  # fmt: skip

        # Every method counts in a window: tools/list rebuilt the catalogue uncounted.
        start_of_fresh_rate_window()
        with self.settings(BRAIN_MCP_RATE_LIMITS={"read": 2}):
            listed = [self.mcp(issued["access_token"]) for _ in range(3)]
        assert [answer.status_code for answer in listed] == [200, 200, 429]
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        # An Origin that is no URL at all was an unauthenticated 500 (urlsplit raised).
        for path in ("/api/mcp", "/api/build/mcp"):
            odd = self.client.post(path, data=json.dumps(ping), content_type="application/json",
                                   HTTP_ORIGIN="https://[x")  # fmt: skip
            assert odd.status_code == 403, path
        # An unknown method's name is echoed short (a megabyte of it came back whole).
        start_of_fresh_rate_window()
        unknown = post({"jsonrpc": "2.0", "id": 2, "method": "m" * 100_000})
        assert unknown.json()["error"]["code"] == -32601
        assert len(unknown.content) < 1_000

    def test_a_batch_of_waits_shares_one_waiting_budget(self) -> None:
        """Twenty await_answer calls in one 2025-03-26 batch held a web thread 20 x 25 s."""
        from unittest import mock

        from answers.credentials import question_credential_issue
        from answers.services import question_ask, question_await
        from mcp_api import views

        raw = question_credential_issue(actor=SYSTEM, name="bot", member=self.alice)[1]
        question = question_ask(actor=self.alice, text="Who approves discounts?", enqueue=False)
        arguments = {"question_id": question.pk, "wait_seconds": 25}
        wait = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "await_answer", "arguments": arguments},
        }
        with (
            mock.patch.object(views, "BATCH_WAIT_SECONDS", 0.0),
            mock.patch("mcp_api.tools.answers.question_await", wraps=question_await) as spy,
        ):
            answer = self.client.post("/api/mcp", data=json.dumps([{**wait, "id": n} for n in range(3)]),
                                      content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}")  # fmt: skip
        assert answer.status_code == 200
        assert [item["result"]["structuredContent"]["status"] for item in answer.json()] == ["queued"] * 3
        assert [call.kwargs["wait_seconds"] for call in spy.call_args_list] == [0.0, 0.0, 0.0]

    # ----------------------------------------------------------------- registration

    def test_registration_is_open_but_only_for_the_authorization_code_grant(self) -> None:
        assert self.register()["grant_types"] == ["authorization_code", "refresh_token"]
        refused = self.client.post(
            "/oauth/register/",
            data=json.dumps({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
            content_type="application/json",
        )
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_client_metadata"

    def test_registrations_are_rate_limited_per_client_address(self) -> None:
        body = json.dumps({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})
        # Fresh subscribers (an IPv6 /64 counts as one address): rate windows live in Redis for a
        # minute, across tests.
        first, second = (f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}::1" for _ in range(2))
        start_of_fresh_rate_window()
        with self.settings(BRAIN_MCP_RATE_LIMITS={"register": 2}):
            statuses = [
                self.client.post("/oauth/register/", data=body, content_type="application/json",
                                 REMOTE_ADDR=first).status_code
                for _ in range(3)
            ]  # fmt: skip
            assert statuses == [201, 201, 429]
            again = self.client.post("/oauth/register/", data=body, content_type="application/json",
                                     REMOTE_ADDR=first)  # fmt: skip
            assert 1 <= int(again["Retry-After"]) <= 60
            elsewhere = self.client.post("/oauth/register/", data=body, content_type="application/json",
                                         REMOTE_ADDR=second)  # fmt: skip
            assert elsewhere.status_code == 201

    def test_token_requests_are_rate_limited_per_client_address_before_any_secret_is_checked(self) -> None:
        # A confidential client's secret is checked with the slow password hash: a stream of
        # wrong ones must stop at the cap, before the toolkit (and the hash) sees the request.
        client = Application.objects.create(
            name="Confidential", client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris=REDIRECT,
            client_secret="the-real-secret-0123456789",
        )  # fmt: skip
        wrong = {"grant_type": "authorization_code", "code": "x", "redirect_uri": REDIRECT,
                 "client_id": client.client_id, "client_secret": "a-wrong-secret"}  # fmt: skip
        first, second = (f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}::1" for _ in range(2))
        start_of_fresh_rate_window()
        with (
            self.settings(BRAIN_MCP_RATE_LIMITS={"token": 2}),
            mock.patch.object(TokenView, "post", autospec=True, side_effect=TokenView.post) as toolkit,
        ):
            answers = [self.client.post("/oauth/token/", data=wrong, REMOTE_ADDR=first) for _ in range(3)]
            assert [answer.status_code for answer in answers] == [401, 401, 429]
            assert toolkit.call_count == 2  # the third never reached the secret check
            assert answers[2].json()["error"] == "rate_limited"
            assert 1 <= int(answers[2]["Retry-After"]) <= 60
            assert answers[2]["Cache-Control"] == "no-store"
            elsewhere = self.client.post("/oauth/token/", data=wrong, REMOTE_ADDR=second)
            assert elsewhere.status_code == 401
            # Revocation checks the same secret the same way: the same window.
            revoke = {"token": "x", "client_id": client.client_id, "client_secret": "a-wrong-secret"}
            assert self.client.post("/oauth/revoke/", data=revoke, REMOTE_ADDR=first).status_code == 429

    def test_a_query_string_oauthlib_cannot_decode_is_invalid_request_not_a_server_error(self) -> None:
        """oauthlib re-reads the query itself and raised ValueError on "%zz": an anonymous 500
        on the token and revocation endpoints (the consent page refused it already)."""
        client_id = self.register()["client_id"]
        for path, body in (
            ("/oauth/token/?x=%zz", {"grant_type": "authorization_code", "code": "abc", "client_id": client_id}),
            ("/oauth/revoke/?x=%zz", {"token": "abc", "client_id": client_id}),
        ):
            answer = self.client.post(path, data=body)
            assert answer.status_code == 400, (path, answer.content[:200])
            assert answer.json()["error"] == "invalid_request"

    # ----------------------------------------------------------------- PKCE

    def test_pkce_s256_is_required_plain_is_refused_and_a_wrong_verifier_gets_no_token(self) -> None:
        client_id = self.register()["client_id"]
        missing = parse_qs(urlsplit(self.authorize(client_id)["Location"]).query)
        assert missing["error"] == ["invalid_request"]
        assert "code" not in missing
        assert missing["error_description"] == ["Code challenge required."]
        plain = self.authorize(client_id, code_challenge="a" * 50, code_challenge_method="plain")
        refused = parse_qs(urlsplit(plain["Location"]).query)
        assert refused["error"] == ["invalid_request"]
        assert "code" not in refused
        assert "S256" in refused["error_description"][0]
        _verifier, challenge = pkce()
        code = self.code_for(client_id, challenge)
        wrong = self.token(
            grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
            code_verifier=pkce()[0],
        )  # fmt: skip
        assert wrong.status_code == 400
        assert wrong.json()["error"] == "invalid_grant"
        assert not AccessToken.objects.filter(user=self.alice.user).exists()

    # ----------------------------------------------------------------- resource binding (RFC 8707)

    def test_a_foreign_resource_is_refused_and_a_token_without_one_is_still_bound_to_mcp(self) -> None:
        client_id = self.register()["client_id"]
        foreign = self.authorize(
            client_id, code_challenge=pkce()[1], code_challenge_method="S256", resource="https://evil.example/api"
        )
        assert foreign.status_code == 400
        assert "only for the resource" in foreign.content.decode()
        verifier, challenge = pkce()
        code = self.code_for(client_id, challenge)  # no resource parameter at all
        issued = self.token(
            grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
            code_verifier=verifier,
        ).json()  # fmt: skip
        stored = AccessToken.objects.get(token_checksum=hashlib.sha256(issued["access_token"].encode()).hexdigest())
        assert stored.resource == [MCP]

    def test_a_token_bound_to_another_resource_is_refused(self) -> None:
        issued = self.connect()
        AccessToken.objects.filter(user=self.alice.user).update(resource=["https://elsewhere.example/api/mcp"])
        assert self.mcp(issued["access_token"]).status_code == 401

    # ----------------------------------------------------------------- using the token

    def test_the_token_works_in_the_header_and_never_in_the_query_string(self) -> None:
        issued = self.connect()
        assert self.mcp(issued["access_token"]).status_code == 200
        in_query = self.mcp(None, path=f"/api/mcp?access_token={issued['access_token']}")
        assert in_query.status_code == 401

    def test_scopes_are_a_projection_a_memory_token_sees_the_memory_tools_and_no_corpus_tool(self) -> None:
        corpus = self.connect("corpus:read")
        names = {tool["name"] for tool in self.mcp(corpus["access_token"]).json()["result"]["tools"]}
        assert "read_page" in names
        assert "write_page" not in names
        memory_only = self.connect("memory")
        memory_names = {tool["name"] for tool in self.mcp(memory_only["access_token"]).json()["result"]["tools"]}
        assert memory_names == {
            "remember", "append", "update", "recall", "list_recent", "list_teams", "get", "forget", "set_status",
            "link", "unlink", "connections", "share", "get_prompt_capsule",
        }  # fmt: skip
        assert not memory_names & names
        call = self.client.post(
            "/api/mcp",
            data=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "read_page", "arguments": {"path": "topics/a.md"}}}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {memory_only['access_token']}",
        )  # fmt: skip
        assert call.json()["error"]["message"] == "Unknown tool: read_page"

    def test_the_person_may_narrow_the_scopes_but_not_widen_them(self) -> None:
        client_id = self.register()["client_id"]
        self.client.force_login(self.alice.user)
        verifier, challenge = pkce()
        query = urlencode({
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
            "scope": "corpus:read", "code_challenge": challenge, "code_challenge_method": "S256",
        })  # fmt: skip
        consent = self.client.get("/oauth/authorize/?" + query)
        assert [scope for scope, _ in consent.context["scope_choices"]] == ["corpus:read"]
        fields = {name: value for name, value in consent.context["form"].initial.items() if value is not None}
        nothing = self.client.post(
            "/oauth/authorize/?" + query, data={**fields, "allow": "Authorize", "scope_choices_shown": "1"}
        )
        assert "code=" not in nothing.get("Location", "")
        widened = self.client.post(
            "/oauth/authorize/?" + query,
            data={
                **fields,
                "allow": "Authorize",
                "scope_choices_shown": "1",
                "scope_choice": ["corpus:read", "memory"],
            },
        )
        code = parse_qs(urlsplit(widened["Location"]).query)["code"][0]
        token = self.token(grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                           code_verifier=verifier).json()  # fmt: skip
        assert token["scope"] == "corpus:read"

    def test_a_build_credential_is_not_a_person_token_and_a_person_token_is_not_a_build_credential(self) -> None:
        issued = self.connect()
        assert self.mcp(issued["access_token"], path="/api/build/mcp").status_code == 401

    def test_refresh_rotates_and_the_old_refresh_token_cannot_be_reused(self) -> None:
        issued = self.connect()
        refreshed = self.token(
            grant_type="refresh_token", refresh_token=issued["refresh_token"], client_id=issued["client_id"]
        )
        assert refreshed.status_code == 200, refreshed.content
        assert refreshed.json()["refresh_token"] != issued["refresh_token"]
        assert self.mcp(refreshed.json()["access_token"]).status_code == 200
        replay = self.token(
            grant_type="refresh_token", refresh_token=issued["refresh_token"], client_id=issued["client_id"]
        )
        assert replay.status_code == 400

    def test_each_scope_consent_sentence_names_every_write_its_tools_make(self) -> None:
        from mcp_api.tools import CATALOGUE
        from oauth.config import SCOPES

        for tool in CATALOGUE:
            if tool.read_only or "person" not in tool.kinds:
                continue
            for scope in tool.scopes:
                sentence = SCOPES[scope].lower()
                with self.subTest(tool=tool.name, scope=scope):
                    words = {"tag_source": "tag", "remember": "record"}.get(tool.name, "record")
                    assert words in sentence, (tool.name, sentence)

    def test_the_mcp_resource_advertises_exactly_the_scopes_its_tools_ask_for(self) -> None:
        from brain.callers import MCP_SCOPES
        from mcp_api.tools import CATALOGUE

        person_tools = [tool for tool in CATALOGUE if "person" in tool.kinds]
        assert set().union(*(tool.scopes for tool in person_tools)) == MCP_SCOPES

    def test_a_replayed_authorization_code_revokes_every_token_it_issued(self) -> None:
        client = self.register()
        verifier, challenge = pkce()
        code = self.code_for(client["client_id"], challenge, scope="corpus:read", resource=MCP)
        exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                    "client_id": client["client_id"], "code_verifier": verifier, "resource": MCP}  # fmt: skip
        issued = self.token(**exchange).json()
        refreshed = self.token(
            grant_type="refresh_token", refresh_token=issued["refresh_token"], client_id=client["client_id"]
        ).json()
        assert self.mcp(refreshed["access_token"]).status_code == 200
        replay = self.token(**exchange)
        assert replay.status_code == 400
        assert replay.json()["error"] == "invalid_grant"
        # Everything descended from the code is dead: the first pair and the refreshed one.
        assert self.mcp(issued["access_token"]).status_code == 401
        assert self.mcp(refreshed["access_token"]).status_code == 401
        again = self.token(
            grant_type="refresh_token", refresh_token=refreshed["refresh_token"], client_id=client["client_id"]
        )
        assert again.status_code == 400
        assert AuditEvent.objects.filter(action="oauth.code_replay").count() == 1

    def test_registration_refuses_plain_http_redirects_except_loopback(self) -> None:
        for uri, allowed in (
            ("http://agent.example/cb", False),
            ("http://127.0.0.1:8765/cb", True),
            ("http://[::1]:8765/cb", True),
            ("http://localhost:8765/cb", True),
            ("https://agent.example/cb", True),
            ("javascript:alert(1)", False),
            ("http://[::1/cb", False),
            ("https://[x]/cb", False),
        ):
            body = {"client_name": "Agent", "redirect_uris": [uri], "token_endpoint_auth_method": "none"}
            response = self.client.post("/oauth/register/", data=json.dumps(body), content_type="application/json")
            with self.subTest(uri=uri):
                assert (response.status_code == 201) == allowed, response.content

    def test_an_apps_own_scheme_is_allowed_when_the_operator_allows_it(self) -> None:
        from oauth.views import _redirect_refusal

        with override_settings(OAUTH2_PROVIDER=provider_settings(BASE, ["https", "http", "cursor"])):
            assert _redirect_refusal("cursor://anysphere.cursor-retrieval/oauth/callback") is None
            assert _redirect_refusal("vscode://publisher.ext/cb") is not None
            assert _redirect_refusal("http://agent.example/cb") is not None
            assert _redirect_refusal("http://127.0.0.1:9/cb") is None

    def test_client_management_cannot_widen_a_client(self) -> None:
        client = self.register()
        headers: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {client['registration_access_token']}"}
        url = client["registration_client_uri"].replace(BASE, "")
        base = {"client_id": client["client_id"], "client_name": "Agent", "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none"}  # fmt: skip
        for change in (
            {"grant_types": ["client_credentials"]},
            {"grant_types": ["authorization_code", "password"]},
            {"token_endpoint_auth_method": "client_secret_basic"},
            {"redirect_uris": ["http://agent.example/cb"]},
            {"token_endpoint_auth_method": None},  # left out: the toolkit would make it confidential
        ):
            body = {key: value for key, value in {**base, **change}.items() if value is not None}
            response = self.client.put(url, data=json.dumps(body), content_type="application/json",
                                       **headers)  # fmt: skip
            with self.subTest(change=change):
                assert response.status_code == 400, response.content
        application = Application.objects.get(client_id=client["client_id"])
        assert application.authorization_grant_type == "authorization-code"
        assert application.client_type == "public"
        renamed = self.client.put(url, data=json.dumps({**base, "client_name": "Agent 2"}),
                                  content_type="application/json", **headers)  # fmt: skip
        assert renamed.status_code == 200, renamed.content

    def test_the_daily_sweep_deletes_dormant_tokens_and_keeps_live_ones(self) -> None:
        """A connection whose access token expired longer ago than a refresh token lives is
        gone (refresh and access token); a live one still works."""
        from django.utils import timezone
        from oauth2_provider.models import RefreshToken

        from oauth.config import REFRESH_TOKEN_SECONDS
        from oauth.tasks import clear_expired_tokens_task

        dormant, live = self.connect(), self.connect()
        checksum = hashlib.sha256(dormant["access_token"].encode()).hexdigest()
        long_ago = timezone.now() - timezone.timedelta(seconds=REFRESH_TOKEN_SECONDS + 60)
        assert AccessToken.objects.filter(token_checksum=checksum).update(expires=long_ago) == 1
        tokens, refresh_tokens = AccessToken.objects.count(), RefreshToken.objects.count()

        clear_expired_tokens_task()

        assert not AccessToken.objects.filter(token_checksum=checksum).exists()
        assert AccessToken.objects.count() == tokens - 1
        assert RefreshToken.objects.count() == refresh_tokens - 1
        refused = self.token(
            grant_type="refresh_token", refresh_token=dormant["refresh_token"], client_id=dormant["client_id"]
        )
        assert refused.status_code == 400
        assert self.mcp(live["access_token"]).status_code == 200

    def test_deactivating_a_member_stops_their_apps_at_once(self) -> None:
        issued = self.connect()
        Member.objects.filter(pk=self.alice.pk).update(is_active=False)
        assert self.mcp(issued["access_token"]).status_code == 401

    # ----------------------------------------------------------------- disconnecting

    def test_connected_apps_lists_the_app_and_disconnect_revokes_its_tokens(self) -> None:
        issued = self.connect()
        application = Application.objects.get(client_id=issued["client_id"])
        page = self.client.get("/account/apps/")
        assert page.status_code == 200
        assert "Agent" in page.content.decode()
        assert "corpus:read" in page.content.decode()
        answer = self.client.post(f"/account/apps/{application.pk}/revoke")
        assert answer.status_code == 302
        assert self.mcp(issued["access_token"]).status_code == 401
        assert (
            self.token(
                grant_type="refresh_token", refresh_token=issued["refresh_token"], client_id=issued["client_id"]
            ).status_code
            == 400
        )
        assert "No apps are connected" in self.client.get("/account/apps/").content.decode()

    def test_one_member_cannot_disconnect_anothers_app(self) -> None:
        issued = self.connect()
        application = Application.objects.get(client_id=issued["client_id"])
        bob = member_create(actor=SYSTEM, username="bob")
        self.client.force_login(bob.user)
        assert self.client.post(f"/account/apps/{application.pk}/revoke").status_code == 404
        assert self.mcp(issued["access_token"]).status_code == 200

    def test_an_admin_revokes_a_token_or_a_client_in_the_admin(self) -> None:
        issued = self.connect()
        admin = member_create(actor=SYSTEM, username="root", role="owner")
        admin.user.is_staff = admin.user.is_superuser = True
        admin.user.save()
        self.client.force_login(admin.user)
        token = AccessToken.objects.get(user=self.alice.user)
        revoked = self.client.post(
            "/admin/oauth2_provider/accesstoken/", {"action": "revoke_tokens", "_selected_action": [token.pk]}
        )
        assert revoked.status_code == 302
        assert self.mcp(issued["access_token"]).status_code == 401
        event = AuditEvent.objects.get(action="oauth.admin_revoke")
        assert (event.target, event.metadata["tokens"]) == ("alice", 1)

        # A token is revoked, never edited: its page is read-only (it re-pointed a live token
        # to another person, or extended it, unaudited).
        live = self.connect()
        self.client.force_login(admin.user)
        token = AccessToken.objects.latest("pk")
        page = self.client.get(f"/admin/oauth2_provider/accesstoken/{token.pk}/change/")
        assert page.status_code == 200
        assert b'name="_save"' not in page.content
        later = (timezone.now() + dt.timedelta(days=3650)).strftime("%Y-%m-%d")
        self.client.post(f"/admin/oauth2_provider/accesstoken/{token.pk}/change/", {
            "user": admin.user.pk, "application": token.application_id, "scope": token.scope,
            "expires_0": later, "expires_1": "00:00:00"})  # fmt: skip
        token.refresh_from_db()
        assert (token.user_id, token.expires.year < timezone.now().year + 5) == (self.alice.user.pk, True)
        refresh = RefreshToken.objects.get(access_token=token)
        self.client.post("/admin/oauth2_provider/refreshtoken/",
                         {"action": "revoke_tokens", "_selected_action": [refresh.pk]})  # fmt: skip
        assert self.mcp(live["access_token"]).status_code == 401
        assert AuditEvent.objects.filter(action="oauth.admin_revoke").count() == 2

        second = self.connect()
        application = Application.objects.get(client_id=second["client_id"])
        self.client.force_login(admin.user)
        removed = self.client.post(
            "/admin/oauth2_provider/application/",
            {"action": "revoke_and_remove", "_selected_action": [application.pk]},
        )
        assert removed.status_code == 302
        assert not Application.objects.filter(pk=application.pk).exists()
        assert self.mcp(second["access_token"]).status_code == 401

    def test_a_user_who_is_not_an_active_member_sees_the_refusal_not_the_consent(self) -> None:
        client_id = self.register()["client_id"]
        Member.objects.filter(pk=self.alice.pk).update(is_active=False)
        refused = self.authorize(client_id, code_challenge=pkce()[1], code_challenge_method="S256")
        assert refused.status_code == 403
        assert "active member" in refused.content.decode()

    # ----------------------------------------------------------------- what an audit found, held shut

    def test_approval_prompt_auto_never_skips_the_consent_page(self) -> None:
        issued = self.connect()  # a live token of this app, for corpus:read on /api/mcp
        _verifier, challenge = pkce()
        query = {"response_type": "code", "client_id": issued["client_id"], "redirect_uri": REDIRECT, "state": "s",
                 "scope": "corpus:read", "code_challenge": challenge, "code_challenge_method": "S256",
                 "approval_prompt": "auto", "resource": f"{BASE}/api/v1"}  # fmt: skip
        answer = self.client.get("/oauth/authorize/?" + urlencode(query))
        assert answer.status_code == 200  # the consent page, not a 302 with a code
        assert answer.context["form"] is not None

    def test_registration_takes_one_uri_a_string_and_text_names(self) -> None:
        refused: list[dict[str, Any]] = [
            {"redirect_uris": ["http://127.0.0.1/cb http://evil.example/cb"]},
            {"redirect_uris": ["http://127.0.0.1/cb\thttp://evil.example/cb"]},
            {"redirect_uris": [REDIRECT], "client_name": {"x": "Agent AKIAQYLPMN5HHHFPZAM2"}},
            {"redirect_uris": [REDIRECT], "client_name": [["Agent"]]},
            {"redirect_uris": [REDIRECT], "client_name": 5},
            {"redirect_uris": [REDIRECT], "client_name": None},  # was a NOT NULL violation: a 500
            {"redirect_uris": ["https://a.example:99999/cb"]},  # every later authorization was a 500
            {"redirect_uris": ["https://a.example:abc/cb"]},
            {"redirect_uris": [REDIRECT], "software_version": "x" * 70_000},  # past the body's bound
            {"redirect_uris": [f"http://127.0.0.1:{port}/cb" for port in range(40000, 40021)]},
        ]
        for metadata in refused:
            with self.subTest(metadata=str(metadata)[:80]):
                body = json.dumps({"token_endpoint_auth_method": "none", **metadata})
                response = self.client.post("/oauth/register/", data=body, content_type="application/json")
                assert response.status_code == 400, response.content
                assert response.json()["error"] == "invalid_client_metadata"
                assert "AKIA" not in response.content.decode()

    def test_an_update_with_a_null_name_is_refused_and_the_client_kept(self) -> None:
        client = self.register()
        update = {"client_name": None, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
        response = self.client.put(
            client["registration_client_uri"].replace(BASE, ""), data=json.dumps(update),
            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {client['registration_access_token']}",
        )  # fmt: skip
        assert response.status_code == 400
        assert response.json()["error"] == "invalid_client_metadata"
        assert Application.objects.get(client_id=client["client_id"]).name == "Agent"

    def test_an_authorization_whose_redirect_port_cannot_be_read_is_a_bad_request(self) -> None:
        client_id = self.register()["client_id"]
        for uri in ("https://agent.example:99999/cb", "https://agent.example:x/cb", "https://[fe80::1/cb"):
            with self.subTest(uri=uri):
                answer = self.authorize(client_id, redirect_uri=uri)
                assert answer.status_code == 400
                assert "redirect_uri is not a valid URI" in answer.content.decode()

    def test_a_client_edited_in_the_admin_keeps_registrations_rules_and_consent(self) -> None:
        """The toolkit's admin form took a plain-http redirect and "skip authorization": a member
        opening a link was sent a code at once, with no consent page and no audit."""
        from django.contrib.auth.models import User

        from grants.models import AuditEvent

        root = User.objects.create_superuser("root", "root@example.com", "pw-root-12345")
        admin = Client()
        admin.force_login(root)
        form = {"name": "Rogue", "client_type": "public", "authorization_grant_type": "authorization-code",
                "redirect_uris": "http://evil.example/cb", "skip_authorization": "on", "algorithm": "",
                "post_logout_redirect_uris": "", "allowed_origins": "", "client_id": "rogue-client-0001",
                "client_secret": "x" * 40}  # fmt: skip
        refused = admin.post("/admin/oauth2_provider/application/add/", form)
        assert refused.status_code == 200  # the form again, naming the rule
        assert "use https" in refused.content.decode()
        saved = admin.post("/admin/oauth2_provider/application/add/", {**form, "redirect_uris": REDIRECT})
        assert saved.status_code == 302, saved.content[:500]
        app = Application.objects.get(name="Rogue")
        assert app.skip_authorization is False
        assert AuditEvent.objects.filter(action="oauth.client_add", target=app.client_id).exists()
        Application.objects.filter(pk=app.pk).update(skip_authorization=True)  # as a raw edit could
        _verifier, challenge = pkce()
        answer = self.authorize(app.client_id, code_challenge=challenge, code_challenge_method="S256")
        assert answer.status_code == 400
        assert "skip the consent page" in answer.content.decode()

    def test_the_token_endpoint_knows_no_password_or_device_grant(self) -> None:
        client_id = self.register()["client_id"]
        self.alice.user.set_password("the right password 1")
        self.alice.user.save()
        answers = [
            self.token(grant_type="password", username="alice", password=password, client_id=client_id)
            for password in ("the right password 1", "a wrong one")
        ]
        assert [a.status_code for a in answers] == [400, 400]
        assert answers[0].json() == answers[1].json()
        assert answers[0].json()["error"] == "unsupported_grant_type"
        device = self.token(grant_type="urn:ietf:params:oauth:grant-type:device_code", device_code="x",
                            client_id=client_id)  # fmt: skip
        assert device.json()["error"] == "unsupported_grant_type"
        twice = self.client.post("/oauth/token/", data={"grant_type": ["refresh_token", "password"]})
        assert twice.json()["error"] == "unsupported_grant_type"

    def test_pkce_values_have_rfc_7636_shapes(self) -> None:
        client_id = self.register()["client_id"]
        for challenge in ("short", "a" * 129, "a" * 42 + "!"):
            with self.subTest(challenge=challenge[:20]):
                answer = self.authorize(client_id, code_challenge=challenge, code_challenge_method="S256")
                assert answer.status_code == 400
                assert "RFC 7636" in answer.content.decode()
        for verifier in ("x" * 10, "x" * 200, "é" * 50, "a b" * 20):
            with self.subTest(verifier=verifier[:20]):
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
                code = self.code_for(client_id, challenge)
                exchange = self.token(grant_type="authorization_code", code=code, redirect_uri=REDIRECT,
                                      client_id=client_id, code_verifier=verifier)  # fmt: skip
                assert exchange.status_code == 400
                assert exchange.json()["error"] == "invalid_grant"

    def test_an_inactive_member_refreshes_nothing_and_a_code_replayed_by_another_client_revokes(self) -> None:
        issued = self.connect()
        self.alice.is_active = False
        self.alice.save(update_fields=["is_active"])
        refused = self.token(grant_type="refresh_token", refresh_token=issued["refresh_token"],
                             client_id=issued["client_id"])  # fmt: skip
        assert refused.status_code == 400
        self.alice.is_active = True
        self.alice.save(update_fields=["is_active"])
        # A code redeemed by one client and presented again by another: the first client's tokens die.
        first = self.register()
        verifier, challenge = pkce()
        code = self.code_for(first["client_id"], challenge, resource=MCP)
        exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                    "code_verifier": verifier, "resource": MCP}  # fmt: skip
        tokens = self.token(client_id=first["client_id"], **exchange).json()
        assert self.mcp(tokens["access_token"]).status_code == 200
        other = self.register()
        assert self.token(client_id=other["client_id"], **exchange).status_code == 400
        assert self.mcp(tokens["access_token"]).status_code == 401

    def test_the_consent_post_checks_the_pkce_challenge_it_carries(self) -> None:
        """The consent form's hidden fields can be edited: 300 characters were a database error
        (500) and 3 a guessable verifier, because the challenge was checked on the GET only."""
        client_id = self.register()["client_id"]
        self.client.force_login(self.alice.user)
        _verifier, challenge = pkce()
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
                 "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
        consent = self.client.get("/oauth/authorize/?" + urlencode(query))
        fields = {name: value for name, value in consent.context["form"].initial.items() if value is not None}
        for edited in ("a" * 300, "abc"):
            # An edited method ("", "S256 ") must not take the challenge past the check.
            for method in ("S256", "", "S256 ", "plain"):
                with self.subTest(length=len(edited), method=method):
                    edits = {"code_challenge": edited, "code_challenge_method": method, "allow": "Authorize"}
                    answer = self.client.post("/oauth/authorize/?" + urlencode(query), data={**fields, **edits})
                    assert answer.status_code == 400
                    assert "code_challenge" in answer.content.decode()
            # Left out of the form and put in the URL, where the toolkit then reads it.
            with self.subTest(length=len(edited), where="query string"):
                form = {k: v for k, v in fields.items() if not k.startswith("code_challenge")}
                in_url = {**query, "code_challenge": edited}
                answer = self.client.post("/oauth/authorize/?" + urlencode(in_url), data={**form, "allow": "Authorize"})
                assert answer.status_code == 400
        assert not Grant.objects.filter(application__client_id=client_id).exists()

    def test_a_nonce_longer_than_a_grant_keeps_is_refused_before_consent(self) -> None:
        """The grant stores the OpenID nonce in 255 characters: a longer one showed the consent
        page and then answered 500 to Connect, every time (a link anyone could send)."""
        client_id = self.register()["client_id"]
        self.client.force_login(self.alice.user)
        _verifier, challenge = pkce()
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
                 "code_challenge": challenge, "code_challenge_method": "S256", "nonce": "n" * 256}  # fmt: skip
        shown = self.client.get("/oauth/authorize/?" + urlencode(query))
        assert shown.status_code == 400
        assert "nonce" in shown.content.decode()
        # The consent form of a fitting nonce, its hidden nonce edited before Connect.
        consent = self.client.get("/oauth/authorize/?" + urlencode({**query, "nonce": "n" * 30}))
        assert consent.status_code == 200
        fields = {name: value for name, value in consent.context["form"].initial.items() if value is not None}
        with transaction.atomic():  # a 500 here would leave the test's transaction unusable
            answer = self.client.post(
                "/oauth/authorize/?" + urlencode({**query, "nonce": "n" * 30}),
                data={**fields, "nonce": "n" * 256, "allow": "Authorize"},
            )
        assert answer.status_code == 400
        assert not Grant.objects.filter(application__client_id=client_id).exists()

    def test_a_client_removing_itself_revokes_its_tokens_and_is_audited(self) -> None:
        """RFC 7592 DELETE went through the toolkit's own view: the client vanished, unaudited."""
        client = self.register()
        verifier, challenge = pkce()
        code = self.code_for(client["client_id"], challenge, scope="corpus:read", resource=MCP)
        issued = self.token(
            grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client["client_id"],
            code_verifier=verifier, resource=MCP,
        ).json()  # fmt: skip
        assert self.mcp(issued["access_token"]).status_code == 200
        client_uri = client["registration_client_uri"].replace(BASE, "")
        self.client.logout()
        assert self.client.delete(client_uri).status_code == 401
        assert self.client.delete(client_uri, HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
        assert Application.objects.filter(client_id=client["client_id"]).exists()
        answer = self.client.delete(client_uri, HTTP_AUTHORIZATION=f"Bearer {client['registration_access_token']}")
        assert answer.status_code == 204
        assert not Application.objects.filter(client_id=client["client_id"]).exists()
        assert self.mcp(issued["access_token"]).status_code == 401
        event = AuditEvent.objects.get(action="oauth.client_remove")
        assert (event.target, event.metadata["how"]) == ("Agent", "registration_token")
        assert event.metadata["tokens"] >= 2  # alice's access and refresh tokens
