"""The memory REST API: personal tokens, the layer rule on every endpoint, export and import."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import TestCase, override_settings

from grants.principals import SYSTEM
from grants.services import member_create
from memory.models import Memory, MemoryApiToken
from memory.tokens import api_token_issue, api_token_revoke
from oauth.config import provider_settings

BASE = "https://brain.example.org"
MISSING = "00000000-0000-0000-0000-000000000000"


@override_settings(BRAIN_BASE_URL=BASE, OAUTH2_PROVIDER=provider_settings(BASE, ["https"]))
class MemoryApiTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")
        cls.charlie = member_create(actor=SYSTEM, username="charlie", role="admin")

    def setUp(self) -> None:
        self.tokens = {
            name: api_token_issue(actor=getattr(self, name), name="cli")[1] for name in ("alice", "bob", "charlie")
        }

    def api(self, who: str, method: str, path: str, body: Any = None, **extra: Any) -> Any:
        kwargs: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens[who]}", **extra}
        if body is not None:
            kwargs["data"] = body if isinstance(body, str) else json.dumps(body)
            kwargs["content_type"] = "application/json"
        return getattr(self.client, method)(f"/api/memory/{path}", **kwargs)

    def capture(self, who: str, content: str, **fields: Any) -> str:
        response = self.api(who, "post", "capture", {"content": content, **fields})
        assert response.status_code == 201, response.content
        return str(response.json()["memory"]["id"])

    def test_no_surface_shows_a_personal_memory_to_anyone_else(self) -> None:
        secret = self.capture("alice", "My dentist appointment is on the 4th.", tags=["health"])
        own = self.capture("bob", "Bob's own dentist note about appointments.")
        for who in ("bob", "charlie"):
            for method, path, body in (
                ("get", "entries/{}", None),
                ("patch", "entries/{}", {"content": "x"}),
                ("delete", "entries/{}", None),
                ("post", "entries/{}/append", {"text": "x"}),
                ("post", "entries/{}/status", {"status": "deprecated"}),
                ("post", "entries/{}/share", {"workspace": "company"}),
                ("get", "entries/{}/connections", None),
            ):
                hidden = self.api(who, method, path.format(secret), body)
                missing = self.api(who, method, path.format(MISSING), body)
                assert (hidden.status_code, hidden.json()["error"]["message"]) == (404, "Not found."), (who, path)
                assert (missing.status_code, missing.json()["error"]["message"]) == (404, "Not found."), (who, path)
            linked = self.api(who, "post", "links", {"from_id": own, "to_id": secret})
            assert linked.status_code == 404
            assert secret not in self.api(who, "get", "recall?q=dentist+appointment").content.decode()
            assert secret not in self.api(who, "get", "entries?n=50").content.decode()
            assert secret not in self.api(who, "get", "export").content.decode()
            assert "health" not in self.api(who, "get", "stats").json()["top_tags"]
        assert self.api("bob", "get", "count").json()["count"] == 1  # only his own
        assert self.api("alice", "get", f"entries/{secret}").json()["content"].startswith("My dentist")

    def test_shared_memories_refuse_non_authors_by_rule(self) -> None:
        shared = self.capture("alice", "We ship on Thursdays.", workspace="company")
        refused = self.api("bob", "post", f"entries/{shared}/append", {"text": "and Fridays"})
        assert refused.status_code == 403
        assert refused.json()["error"]["message"] == "only the author or an admin may change a shared memory"
        assert self.api("charlie", "post", f"entries/{shared}/status", {"status": "canonical"}).status_code == 200
        assert self.api("bob", "get", f"entries/{shared}").json()["author"] == "alice"

    def test_capture_duplicates_and_bad_input(self) -> None:
        first = self.capture("alice", "The API rate limit is 600 requests per minute.")
        again = self.api("alice", "post", "capture", {"content": "The API rate limit is 600 requests a minute."})
        assert again.status_code == 200
        assert again.json()["outcome"] == "duplicate"
        assert again.json()["memory"]["id"] == first
        secret = self.api("alice", "post", "capture", {"content": "key AKIAIOSFODNN7EXAMPLE"})
        assert secret.status_code == 400
        assert "refused" in secret.json()["error"]["message"]
        assert self.api("alice", "post", "capture", "not json").status_code == 400
        assert self.api("alice", "post", "capture", {"content": "x", "workspace": "team"}).json()["error"][
            "message"
        ] == ('workspace must be "personal" or "company"')
        assert self.api("alice", "get", "capture").status_code == 405

    def test_export_then_import_round_trips_through_the_pipeline(self) -> None:
        for text in ("Invoices go out on the first business day.", "Standups are at 9:30 on weekdays."):
            self.capture("alice", text, tags=["ops"])
        exported = self.api("alice", "get", "export")
        lines = [json.loads(line) for line in exported.content.decode().splitlines()]
        assert [line["content"] for line in lines] == [
            "Invoices go out on the first business day.", "Standups are at 9:30 on weekdays.",
        ]  # fmt: skip
        payload = "\n".join(json.dumps({"content": line["content"], "tags": ["ops"]}) for line in lines)
        again = self.api("bob", "post", "import", payload, content_type="application/x-ndjson")
        assert [result["outcome"] for result in again.json()["results"]] == ["stored", "stored"]
        assert Memory.objects.filter(author=self.bob).count() == 2
        duplicates = self.api("bob", "post", "import", payload, content_type="application/x-ndjson")
        assert [result["outcome"] for result in duplicates.json()["results"]] == ["duplicate", "duplicate"]
        broken = self.api("bob", "post", "import", payload + "\nnot json", content_type="application/x-ndjson")
        assert broken.status_code == 400
        assert broken.json()["error"]["lines"] == ["line 3: not JSON"]
        assert Memory.objects.filter(author=self.bob).count() == 2  # nothing half imported

    def test_listing_by_an_unknown_kind_is_refused_as_recall_refuses_it(self) -> None:
        self.capture("alice", "Invoices go out on the first business day.")
        for path in ("entries?kind=zz", "recall?q=invoices&kind=zz"):
            refused = self.api("alice", "get", path)
            assert refused.status_code == 400, path
            assert "kind must be" in refused.json()["error"]["message"]
        assert self.api("alice", "get", "entries?kind=semantic").status_code == 200

    def test_an_export_cursor_this_api_did_not_issue_is_refused_without_repeating_it(self) -> None:
        import base64

        forged = [
            "2024-01-01T00:00+00:00|'; drop table memories",
            "2024-01-01T00:00|6f1c0000-0000-0000-0000-000000000000",  # no offset
            "not a time|6f1c0000-0000-0000-0000-000000000000",
        ]
        for text in forged:
            cursor = base64.urlsafe_b64encode(text.encode()).decode()
            refused = self.api("alice", "get", f"export?cursor={cursor}")
            assert refused.status_code == 400, text
            assert refused.json()["error"]["message"] == "cursor is not one this API issued"

    def test_an_import_splits_at_newlines_only_and_names_lines_as_sent(self) -> None:
        # U+2028 and U+0085 may stand in a JSON string as written; blank lines still count.
        separators = json.dumps({"content": "First half\u2028second half, and\u0085more."}, ensure_ascii=False)
        answer = self.api("bob", "post", "import", separators + "\n", content_type="application/x-ndjson")
        assert answer.status_code == 200, answer.content
        assert "second half" in Memory.objects.get(author=self.bob).content
        body = '\n\n{"content": "Lunch is at noon."}\n\n\n{"content": 5}\n'
        refused = self.api("bob", "post", "import", body, content_type="application/x-ndjson")
        assert refused.status_code == 400
        assert refused.json()["error"]["lines"] == ["line 6: needs an object with a content string"]

    def test_an_import_with_one_line_the_pipeline_refuses_stores_nothing(self) -> None:
        # Every line parses, but the pipeline refuses line 2 (a secret) and line 4 (a bad kind):
        # lines 1 and 3 were already stored inside the request's transaction and are rolled back.
        payload = "\n".join(json.dumps(record) for record in (
            {"content": "Payroll runs on the 25th."},
            {"content": "the deploy key is AKIAIOSFODNN7EXAMPLE"},
            {"content": "Office closes at 6pm on Fridays."},
            {"content": "Retros are fortnightly.", "kind": "weekly"},
        ))  # fmt: skip
        answer = self.api("bob", "post", "import", payload, content_type="application/x-ndjson")
        assert answer.status_code == 400
        assert answer.json()["error"]["message"] == "nothing was imported"
        lines = answer.json()["error"]["lines"]
        assert [line.split(":")[0] for line in lines] == ["line 2", "line 4"]
        assert "AKIA" not in json.dumps(answer.json())
        assert not Memory.objects.filter(author=self.bob).exists()

    def test_tokens_are_stored_hashed_and_stop_working_when_revoked(self) -> None:
        row = MemoryApiToken.objects.get(member=self.alice)
        assert self.tokens["alice"] not in (row.token_hash, row.prefix)
        assert self.api("alice", "get", "count").status_code == 200
        api_token_revoke(actor=self.alice, token_id=row.pk)
        refused = self.api("alice", "get", "count")
        assert refused.status_code == 401
        # Told the token is no live one (not only what to send), as RFC 6750's invalid_token.
        assert refused.json()["error"]["message"].startswith("The token sent is unknown, expired or revoked.")
        assert 'error="invalid_token"' in refused["WWW-Authenticate"]
        unsent = self.client.get("/api/memory/count")
        assert unsent.status_code == 401
        assert "unknown, expired or revoked" not in unsent.json()["error"]["message"]
        with pytest.raises(MemoryApiToken.DoesNotExist):
            api_token_revoke(actor=self.bob, token_id=MemoryApiToken.objects.get(member=self.charlie).pk)

    def test_recall_endpoint_and_validation(self) -> None:
        self.capture("alice", "The staging database is rebuilt every night at 2am.")
        found = self.api("alice", "get", "recall?q=when+is+staging+reset&topK=3").json()
        assert found["results"][0]["content"].startswith("The staging database")
        assert self.api("alice", "get", "recall?q=x&topK=99").status_code == 400
        assert self.api("alice", "get", "recall?q=x&after=yesterday-ish").status_code == 400


@override_settings(BRAIN_BASE_URL=BASE, OAUTH2_PROVIDER=provider_settings(BASE, ["https"]))
class MemoryApiOAuthTests(TestCase):
    def test_an_oauth_token_works_only_with_the_memory_scope_and_this_api_as_its_resource(self) -> None:
        import datetime as dt
        import secrets

        from django.utils import timezone
        from oauth2_provider.models import AccessToken, Application, set_token_value

        alice = member_create(actor=SYSTEM, username="alice")
        app = Application.objects.create(
            name="CLI", client_type="public", authorization_grant_type="authorization-code",
            redirect_uris="https://cli.example/cb",
        )  # fmt: skip

        def token(scope: str, resource: str) -> str:
            raw = secrets.token_urlsafe(32)
            row = AccessToken(user=alice.user, application=app, scope=scope, resource=[resource],
                              expires=timezone.now() + dt.timedelta(hours=1))  # fmt: skip
            set_token_value(row, raw)
            row.save()
            return raw

        def count(raw: str) -> int:
            return int(self.client.get("/api/memory/count", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code)

        assert count(token("memory", f"{BASE}/api/memory")) == 200
        assert count(token("memory", f"{BASE}/api/mcp")) == 403  # bound to the MCP endpoint only
        assert count(token("corpus:read", f"{BASE}/api/memory")) == 403  # no memory scope
