"""Secrets are refused on every write surface, and never reach a log line, an audit row,
an error body, a stored row or a rendered page.

The MCP part enumerates the tool catalogue: every field of every tool that writes is
either planted with a secret (and must be refused, naming the field) or listed as a lookup
or choice that stores nothing (and must answer without echoing the value). A new write
tool or field fails ``test_every_write_field_is_classified`` until it is added here.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import secrets as stdlib_secrets
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import models
from django.db.models.functions import Cast
from django.test import override_settings
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value

from answers.credentials import question_credential_issue
from brain.logging import SecretRedactingFilter
from brain.text.secrets import find
from builds.models import Build
from builds.services import build_credential_issue, build_open, build_write_page
from corpus.sources import source_create
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue
from mcp_api.tools import CATALOGUE
from memory.services import memory_remember
from memory.tokens import api_token_issue
from oauth.config import provider_settings
from tests.base import BrainTestCase, page_markdown, publish

BASE = "https://brain.example.org"

# Built by concatenation so that the repository itself holds no scannable literal.
AWS = "AKIA" + "QYLPMN5HHHFPZAM2"
AWS_DISGUISED = "AKIA**QYLP**MN5H&#72;HFPZAM2"
CARD_DASHED = "4111-1111-" + "1111-1111"
CARD_DIGITS = "4111111111" + "111111"
IBAN = "GB82 WEST " + "1234 5698 7654 32"
# What must never be found anywhere: long enough to be unambiguous.
FRAGMENTS = ("MN5HHHFPZAM2", "QYLPMN5H", "1111-1111-1111", "1111111111111", "WEST 1234 5698", "WEST12345698")

PRICE_LIST = "topics/pricing/price-list.md"


def _page(**kwargs: Any) -> str:
    return page_markdown(title="Price list", **kwargs)


# (tool, field) -> (planted value, the field name the refusal must mention)
STORED: dict[tuple[str, str], tuple[Any, str]] = {
    ("write_page", "path"): (f"topics/pricing/{CARD_DASHED}.md", "path"),
    ("write_page", "markdown"): (
        _page(body=f"# Price list\n\n## Plans\n\nKey {AWS_DISGUISED} for the team.\n"),
        "body",
    ),
    ("move_page", "new_path"): (f"topics/pricing/{CARD_DASHED}.md", "new_path"),
    ("record_capture", "key"): (f"notes/{CARD_DASHED}", "key"),
    ("record_capture", "title"): (f"Call with {AWS}", "title"),
    ("record_capture", "text"): (f"Pay to {IBAN} today.", "text"),
    ("record_capture", "uri"): (f"https://files.example.org/x?k={AWS}", "uri"),
    ("record_capture", "tags"): ([AWS], "tag"),
    ("record_capture", "category"): (CARD_DASHED, "category"),
    ("record_figure", "key"): (CARD_DASHED, "figure key"),
    ("record_figure", "unit"): (AWS, "figure unit"),
    ("record_figure", "value"): (CARD_DIGITS, "figure value"),
    ("link_pages", "target"): (f"topics/pricing/{CARD_DASHED}.md", "target"),
    ("tag_source", "add"): ([AWS], "tag"),
    ("remember", "content"): (f"The staging key is {AWS_DISGUISED}.", "content"),
    ("remember", "tags"): ([AWS], "tag"),
    ("remember", "source"): (f"slack {AWS}", "source"),
    ("append", "text"): (f"and the card {CARD_DASHED}", "text"),
    ("update", "content"): (f"Wire to {IBAN}.", "content"),
    ("update", "tags"): ([AWS], "tag"),
    ("ask", "question"): (f"Is {AWS} still the deploy key?", "question"),
}

# Fields that name something to look up or choose from: nothing of theirs is stored.
NOT_STORED: set[tuple[str, str]] = {
    ("tag_source", "key"), ("tag_source", "remove"), ("delete_page", "path"), ("move_page", "path"),
    ("record_capture", "kind"), ("record_capture", "sensitivity"), ("record_figure", "page_path"),
    ("record_figure", "as_of"), ("record_figure", "source_key"), ("link_pages", "path"), ("unlink_pages", "path"),
    ("unlink_pages", "target"), ("remember", "workspace"), ("remember", "kind"), ("remember", "volatility"),
    ("remember", "importance"), ("append", "id"), ("update", "id"), ("forget", "id"), ("set_status", "id"),
    ("set_status", "status"), ("link", "from_id"), ("link", "to_id"), ("link", "type"), ("unlink", "from_id"),
    ("unlink", "to_id"), ("unlink", "type"), ("share", "id"), ("share", "workspace"),
    # The one team's id or name, validated against a fixed pair and never stored.
    *((tool, "team") for tool in ("remember", "append", "update", "forget", "set_status", "link", "unlink", "share")),
}  # fmt: skip


def write_tools() -> list[Any]:
    return [tool for tool in CATALOGUE if not tool.read_only]


def assert_clean(text: str, where: str) -> None:
    for fragment in FRAGMENTS:
        assert fragment not in text, f"{fragment!r} found in {where}"


@contextmanager
def captured_log_lines() -> Iterator[io.StringIO]:
    """What the configured console handler writes (with its filters), captured."""
    root = logging.getLogger()
    handlers = [h for h in root.handlers if any(isinstance(f, SecretRedactingFilter) for f in h.filters)]
    assert handlers, "the console handler carries the secret-redacting filter"
    stream = io.StringIO()
    previous = [h.setStream(stream) for h in handlers if isinstance(h, logging.StreamHandler)]  # type: ignore[func-returns-value]
    level = root.level
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.setLevel(level)
        for handler, old in zip(handlers, previous, strict=False):
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(old)


def stored_rows_holding(fragment: str) -> list[str]:
    """Every (model.field) of every installed model whose stored text contains ``fragment``."""
    found: list[str] = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, models.CharField | models.TextField):
                if model._default_manager.filter(**{f"{field.name}__contains": fragment}).exists():
                    found.append(f"{model._meta.label}.{field.name}")
            elif isinstance(field, models.JSONField):
                annotated = model._default_manager.annotate(_as_text=Cast(field.name, models.TextField()))
                if annotated.filter(_as_text__contains=fragment).exists():
                    found.append(f"{model._meta.label}.{field.name}")
    return found


@override_settings(BRAIN_BASE_URL=BASE, OAUTH2_PROVIDER=provider_settings(BASE, ["https"]))
class SecretsOnEveryWriteSurfaceTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="suggest")
        publish(PRICE_LIST, title="Price list", body="# Price list\n\n## Plans\n\nTeam plan.\n")
        source_create(actor=SYSTEM, key="notes/kickoff", kind="note", title="Kickoff", text="Kickoff notes.")
        cls.app = Application.objects.create(
            name="Agent", client_type="public", authorization_grant_type="authorization-code",
            redirect_uris="https://agent.example/cb",
        )  # fmt: skip

    def setUp(self) -> None:
        self.responses: list[str] = []
        self.build = build_open(actor=self.alice, title="Agent edits")
        _, self.build_token = build_credential_issue(actor=self.alice, build=self.build)
        self.memory_token = self._oauth_token()
        self.memory = memory_remember(actor=self.alice, content="We ship on Thursdays.").memory
        _, self.question_token = question_credential_issue(actor=SYSTEM, name="bot", member=self.alice)

    def _oauth_token(self) -> str:
        raw = stdlib_secrets.token_urlsafe(32)
        token = AccessToken(
            user=self.alice.user, application=self.app, scope="memory corpus:read sources:write",
            resource=[f"{BASE}/api/mcp"], expires=timezone.now() + dt.timedelta(hours=1),
        )  # fmt: skip
        set_token_value(token, raw)
        token.save()
        return raw

    # ------------------------------------------------------------------ MCP

    def baseline(self, tool: str) -> dict[str, Any]:
        """Arguments that make ``tool`` succeed (or fail for a reason other than a secret)."""
        memory_id = str(self.memory.pk)
        arguments: dict[str, dict[str, Any]] = {
            "write_page": {"path": PRICE_LIST, "markdown": _page()},
            "move_page": {"path": PRICE_LIST, "new_path": "topics/pricing/prices.md"},
            "delete_page": {"path": PRICE_LIST},
            "record_capture": {
                "key": "notes/call",
                "kind": "note",
                "title": "Call",
                "text": "Notes.",
                "uri": "",
                "tags": ["calls"],
                "category": None,
            },
            "record_figure": {
                "page_path": PRICE_LIST,
                "key": "arr",
                "value": "12",
                "unit": "EUR",
                "as_of": "2026-11-01",
            },
            "link_pages": {"path": PRICE_LIST, "target": "topics/pricing/other.md"},
            "unlink_pages": {"path": PRICE_LIST, "target": "topics/pricing/other.md"},
            "tag_source": {"key": "notes/kickoff", "add": ["kickoff"], "remove": []},
            "submit_for_review": {},
            "remember": {"content": "Deploys happen on Thursdays."},
            "append": {"id": memory_id, "text": "Also on Fridays."},
            "update": {"id": memory_id, "content": "We ship on Fridays."},
            "forget": {"id": memory_id},
            "set_status": {"id": memory_id, "status": "draft"},
            "link": {"from_id": memory_id, "to_id": memory_id, "type": "relates_to"},
            "unlink": {"from_id": memory_id, "to_id": memory_id},
            "share": {"id": memory_id, "workspace": "company"},
            "ask": {"question": "Who approves discounts?"},
        }
        return arguments[tool]  # fmt: skip

    def call(self, tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        if "build" in tool.kinds:
            url, token = "/api/build/mcp", self.build_token
        elif "question" in tool.kinds:
            url, token = "/api/mcp", self.question_token
        else:
            url, token = "/api/mcp", self.memory_token
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool.name, "arguments": arguments},
        }
        with self.captureOnCommitCallbacks(execute=False):
            response = self.client.post(
                url, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
            )
        text = response.content.decode()
        self.responses.append(text)
        assert response.status_code < 500, text
        return dict(response.json())

    def test_every_write_field_is_classified(self) -> None:
        for tool in write_tools():
            for field in tool.input_model.model_json_schema().get("properties", {}):
                assert (tool.name, field) in STORED or (tool.name, field) in NOT_STORED, (
                    f"{tool.name}.{field}: add it to STORED (planted, must be refused) or NOT_STORED"
                )
        write_names = {tool.name for tool in write_tools()}
        assert {name for name, _ in STORED} <= write_names

    def test_every_stored_field_refuses_a_planted_secret_naming_the_field(self) -> None:
        tools = {tool.name: tool for tool in CATALOGUE}
        with captured_log_lines() as logs:
            for (name, field), (planted, label) in STORED.items():
                with self.subTest(tool=name, field=field):
                    arguments = {**self.baseline(name), field: planted}
                    answer = self.call(tools[name], arguments)
                    if "error" in answer:
                        message = answer["error"]["message"]
                    else:
                        assert answer["result"]["isError"], (name, field, answer)
                        message = answer["result"]["content"][0]["text"]
                    assert "refused" in message, (name, field, message)
                    assert label in message, (name, field, message)
            for name, field in sorted(NOT_STORED):
                tool = tools[name]
                if field in tool.input_model.model_json_schema().get("properties", {}):
                    self.call(tool, {**self.baseline(name), field: f"x{CARD_DASHED}"})
        self.assert_nothing_leaked(logs.getvalue())

    # ------------------------------------------------------------------ REST and web forms

    def test_rest_memory_and_uploads_refuse_naming_the_field(self) -> None:
        token = api_token_issue(actor=self.alice, name="cli")[1]
        auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        memory_id = str(self.memory.pk)
        with captured_log_lines() as logs, self.captureOnCommitCallbacks(execute=False):
            cases: list[tuple[str, str, dict[str, Any], str]] = [
                ("post", "/api/memory/capture", {"content": f"key {AWS_DISGUISED}"}, "content"),
                ("post", "/api/memory/capture", {"content": "fine", "tags": [AWS]}, "tag"),
                ("post", "/api/memory/capture", {"content": "fine", "source": f"via {AWS}"}, "source"),
                ("patch", f"/api/memory/entries/{memory_id}", {"content": f"wire {IBAN}"}, "content"),
                ("patch", f"/api/memory/entries/{memory_id}", {"tags": [AWS]}, "tag"),
                ("post", f"/api/memory/entries/{memory_id}/append", {"text": f"card {CARD_DASHED}"}, "text"),
            ]
            for method, url, payload, label in cases:
                with self.subTest(url=url, payload=list(payload)):
                    response = getattr(self.client, method)(
                        url, data=json.dumps(payload), content_type="application/json", **auth
                    )
                    self.responses.append(response.content.decode())
                    assert response.status_code == 400, response.content
                    assert label in response.json()["error"]["message"]
            uploads: list[tuple[dict[str, Any], str]] = [
                ({"file": SimpleUploadedFile(f"card-{CARD_DASHED}.txt", b"plain notes")}, "filename"),
                ({"file": SimpleUploadedFile("notes.txt", b"plain notes"), "title": f"From {AWS}"}, "title"),
                ({"file": SimpleUploadedFile("notes.txt", b"other notes"), "key": f"notes/{CARD_DASHED}"}, "key"),
            ]
            for form, label in uploads:
                with self.subTest(upload=label):
                    response = self.client.post("/api/sources", form, **auth)
                    self.responses.append(response.content.decode())
                    assert response.status_code == 400, response.content
                    assert label in response.json()["error"]["message"]
        self.assert_nothing_leaked(logs.getvalue())

    def test_web_forms_refuse_naming_the_field(self) -> None:
        self.client.force_login(self.alice.user)
        with captured_log_lines() as logs, self.captureOnCommitCallbacks(execute=False):
            response = self.client.post("/memory/", {"content": f"key {AWS_DISGUISED}", "tags": ""}, follow=True)
            self.responses.append(response.content.decode())
            assert "content refused" in response.content.decode()
            response = self.client.post("/ask", {"text": f"Is {AWS} the key?"})
            self.responses.append(response.content.decode())
            assert response.status_code == 400
            assert "question" in response.content.decode()
            response = self.client.post(
                "/sources/upload",
                {"file": SimpleUploadedFile(f"{CARD_DASHED}.txt", b"notes"), "sensitivity": "ordinary"},
            )
            self.responses.append(response.content.decode())
            assert response.status_code == 400
            assert "filename" in response.content.decode()
            archive = io.BytesIO()
            with zipfile.ZipFile(archive, "w") as zipped:
                zipped.writestr(f"topics/pricing/{CARD_DASHED}.md", _page())
                zipped.writestr("topics/pricing/notes.md", _page(body=f"# Notes\n\nKey {AWS_DISGUISED}.\n"))
            response = self.client.post(
                "/builds/import",
                {"title": "Import", "archive": SimpleUploadedFile("pages.zip", archive.getvalue())},
            )
            body = response.content.decode()
            self.responses.append(body)
            assert response.status_code == 400
            assert "refused" in body
            assert "body" in body
            response = self.client.post(
                "/builds/import", {"title": f"Import {AWS}", "archive": SimpleUploadedFile("p.zip", _zip_one())}
            )
            self.responses.append(response.content.decode())
            assert response.status_code < 500
            response = self.client.post(
                "/account/memory-tokens/", {"name": f"cli {AWS}", "scopes": ["memory"]}, follow=True
            )
            self.responses.append(response.content.decode())
            assert "name refused" in response.content.decode()
        self.assert_nothing_leaked(logs.getvalue())

    def test_review_notes_are_refused(self) -> None:
        self.client.force_login(self.alice.user)
        build = build_open(actor=self.alice, title="Price edit")
        build_write_page(build=build, path=PRICE_LIST, markdown=_page(body="# Price list\n\nNew plans.\n"))
        Build.objects.filter(pk=build.pk).update(status=Build.Status.AWAITING_REVIEW)
        for action in ("approve", "reject"):
            field = "note" if action == "approve" else "reason"
            response = self.client.post(f"/builds/{build.public_id}/{action}", {field: f"ok {AWS_DISGUISED}"})
            self.responses.append(response.content.decode())
            assert response.status_code == 400, (action, response.status_code)
            assert "review note" in response.content.decode()
        self.assert_nothing_leaked("")

    def test_the_import_command_refuses_naming_the_field(self) -> None:
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as folder, captured_log_lines() as logs:
            page = Path(folder, "topics", "pricing", "notes.md")
            page.parent.mkdir(parents=True)
            page.write_text(_page(body=f"# Notes\n\nKey {AWS_DISGUISED}.\n"))
            out, err = io.StringIO(), io.StringIO()
            try:
                call_command(
                    "corpus_import", folder, "--requester", "alice", "--approver", "alice", stdout=out, stderr=err
                )
            except (SystemExit, Exception) as failure:
                err.write(str(failure))
            output = out.getvalue() + err.getvalue()
            self.responses.append(output)
            assert "body" in output, output
            assert "refused" in output, output
        self.assert_nothing_leaked(logs.getvalue())

    # ------------------------------------------------------------------ the sweep

    def assert_nothing_leaked(self, log_text: str) -> None:
        assert_clean(log_text, "the log")
        for index, body in enumerate(self.responses):
            assert_clean(body, f"response {index}")
            assert not find(body), f"response {index} holds a finding"
        audit = json.dumps(list(AuditEvent.objects.values("target", "metadata", "target_type")))
        assert_clean(audit, "the audit log")
        for fragment in FRAGMENTS:
            assert stored_rows_holding(fragment) == [], fragment


def _zip_one() -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("topics/pricing/fine.md", _page())
    return archive.getvalue()


class SecretInArgumentNamesTests(BrainTestCase):
    """An argument's name is echoed when it is refused: a pasted key there is redacted too."""

    def test_rest_and_mcp_refusals_never_echo_a_key_used_as_an_argument_name(self) -> None:
        import json

        from builds.services import build_credential_issue, build_open
        from memory.tokens import api_token_issue

        key = "AKIA" + "QYLPMN5HHHFPZAM2"
        token = api_token_issue(actor=self.alice, name="cli", scopes=["memory", "corpus:read"])[1]
        for path, body in (("/api/v1/memories", {"content": "hello there", key: 1}),
                           ("/api/v1/questions", {"question": "who approves?", key: 1})):  # fmt: skip
            response = self.client.post(path, data=json.dumps(body), content_type="application/json",
                                        HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
            assert response.status_code == 400, (path, response.content[:300])
            assert key not in response.content.decode(), path
        _, build_token = build_credential_issue(actor=self.alice, build=build_open(actor=self.alice, title="x"))
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "read_branch", "arguments": {key: 1}}}  # fmt: skip
        response = self.client.post("/api/build/mcp", data=json.dumps(call), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {build_token}")  # fmt: skip
        assert response.json()["result"]["isError"] is True
        assert key not in response.content.decode()
