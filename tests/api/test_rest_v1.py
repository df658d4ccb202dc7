"""REST v1 end to end through the real stack: pages, search, memories, questions, builds,
the error shape, the OpenAPI document and its docs UI served from our own origin."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib.staticfiles import finders
from django.test import Client
from drf_spectacular.validation import validate_schema

from answers.credentials import question_credential_issue
from grants.principals import SYSTEM
from memory.tokens import api_token_issue
from tests.base import BrainTestCase, publish

PRICE_LIST = "topics/pricing/price-list.md"


class RestCase(BrainTestCase):
    """A published price list, and Alice's client with a token of every scope."""

    def setUp(self) -> None:
        publish(PRICE_LIST, title="Price list", body="# Price list\n\n## Plans\n\nTeam plan at 12 EUR per seat.\n")
        self.token = api_token_issue(
            actor=self.alice, name="cli", scopes=["memory", "corpus:read", "sources:write", "builds:write"]
        )[1]
        self.api = Client(HTTP_AUTHORIZATION=f"Bearer {self.token}")


class RestTests(RestCase):
    def post(self, url: str, body: dict[str, Any]) -> Any:
        return self.api.post(url, data=json.dumps(body), content_type="application/json")

    def test_pages_read_list_and_search_under_the_callers_grants(self) -> None:
        page = self.api.get(f"/api/v1/pages/{PRICE_LIST}")
        assert page.status_code == 200
        assert page.json()["title"] == "Price list"
        listed = self.api.get("/api/v1/pages", {"prefix": "topics/pricing/"}).json()
        assert [p["path"] for p in listed["results"]] == [PRICE_LIST]
        history = self.api.get(f"/api/v1/pages/{PRICE_LIST}/history").json()
        assert history["path"] == PRICE_LIST
        assert len(history["revisions"]) == 1
        assert history["revisions"][0]["revision_sha256"] == page.json()["revision_sha256"]
        found = self.api.get("/api/v1/search", {"query": "team plan seat price", "k": "3"}).json()
        assert found["results"][0]["path"] == PRICE_LIST
        # Charlie (admin, no grants) gets 404 for the same page: not permitted looks like missing.
        charlie = Client(HTTP_AUTHORIZATION=f"Bearer {api_token_issue(actor=self.charlie, name='c')[1]}")
        hidden = charlie.get(f"/api/v1/pages/{PRICE_LIST}")
        missing = charlie.get("/api/v1/pages/topics/pricing/nothing.md")
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"]["message"] == missing.json()["error"]["message"]

    def test_lists_walk_by_cursor_and_filter(self) -> None:
        for name in ("a", "b", "c", "d", "e"):
            publish(f"topics/walk/{name}.md", title=f"Walk {name}", type="runbook" if name in "ace" else "topic")
        seen: list[str] = []
        url: str | None = "/api/v1/pages?prefix=topics/walk/&limit=2"
        while url:
            page = self.api.get(url).json()
            assert len(page["results"]) <= 2
            seen += [item["path"] for item in page["results"]]
            url = page["next"]
        assert seen == [f"topics/walk/{name}.md" for name in "abcde"]
        runbooks = self.api.get("/api/v1/pages", {"prefix": "topics/walk/", "type": "runbook"}).json()["results"]
        assert [item["title"] for item in runbooks] == ["Walk a", "Walk c", "Walk e"]
        bad = self.api.get("/api/v1/memories", {"workspace": "elsewhere"})
        assert bad.status_code == 400
        assert "workspace" in bad.json()["error"]["message"]
        # Every filter with a fixed set of values refuses one outside it, naming the filter.
        for url, name, value in (("/api/v1/pages", "status", "nonsense"), ("/api/v1/sources", "kind", "zz"),
                                 ("/api/v1/memories", "kind", "zz"), ("/api/v1/memories", "status", "zz")):  # fmt: skip
            refused = self.api.get(url, {name: value})
            assert refused.status_code == 400, (url, name)
            assert name in refused.json()["error"]["message"]
        assert self.api.get("/api/v1/pages", {"status": "approved"}).status_code == 200
        assert self.api.get("/api/v1/sources", {"kind": "note"}).status_code == 200
        codename = self.api.get("/api/v1/memories", {"team": "Marketing-Private-Codename"})
        assert codename.status_code == 400
        assert "Codename" not in codename.content.decode()  # the filter is named, the value not repeated
        assert "team" in codename.json()["error"]["message"]
        assert self.api.get("/api/v1/memories", {"team": "marketing"}).status_code == 400
        assert self.api.get("/api/v1/memories", {"team": "Shared"}).status_code == 200
        # A cursor is base64: a NUL inside its position slipped past the control-character check
        # and PostgreSQL refused the comparison (a 500). Every bad cursor is one 400.
        import base64

        for url, position in (("/api/v1/pages", "p=%00"), ("/api/v1/pages", "p=a%00b"),
                              ("/api/v1/sources", "p=notadate"), ("/api/v1/memories", "p=notadate")):  # fmt: skip
            tampered = base64.b64encode(position.encode()).decode()
            answer = self.api.get(url, {"cursor": tampered})
            assert answer.status_code == 400, answer.content
            assert "notadate" not in answer.content.decode()  # the refused value is not repeated
        garbage = self.api.get("/api/v1/pages", {"cursor": "garbage"})
        assert garbage.status_code == 400  # not 404, which here means "missing or not yours"

    def test_a_list_of_captures_of_one_date_is_walked_once_each(self) -> None:
        """Equal capture dates came back in any order between pages: one skipped, one twice."""
        from grants.services import grant_issue
        from tests.base import capture

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/notes/", permission="read")
        for number in range(45):
            capture(f"notes/n{number:04d}")  # all captured at the same moment
        seen: list[str] = []
        url: str | None = "/api/v1/sources?prefix=notes/&limit=7"
        while url:
            page = self.api.get(url).json()
            seen += [item["key"] for item in page["results"]]
            url = page["next"]
        assert len(seen) == 45
        assert len(set(seen)) == 45

    def test_memories_round_trip_and_the_team_argument(self) -> None:
        created = self.post("/api/v1/memories", {"content": "We ship on Thursdays.", "team": "company"})
        assert created.status_code == 201, created.content
        memory_id = created.json()["id"]
        assert self.api.get(f"/api/v1/memories/{memory_id}").json()["content"] == "We ship on Thursdays."
        patched = self.api.patch(
            f"/api/v1/memories/{memory_id}", data=json.dumps({"content": "We ship on Fridays."}),
            content_type="application/json",
        )  # fmt: skip
        assert patched.status_code == 200
        assert patched.json()["content"] == "We ship on Fridays."
        recalled = self.api.get("/api/v1/memories/recall", {"query": "when do we ship"}).json()
        assert recalled["results"][0]["id"] == memory_id
        wrong = self.post("/api/v1/memories", {"content": "x", "team": "marketing"})
        assert wrong.status_code == 400
        assert "this brain has one team" in wrong.json()["error"]["message"]
        assert self.api.get("/api/v1/team/workspaces").json()["teams"][0]["id"] == "company"
        assert self.api.delete(f"/api/v1/memories/{memory_id}").status_code == 200
        assert self.api.get(f"/api/v1/memories/{memory_id}").status_code == 404

    def test_count_stats_export_and_import(self) -> None:
        facts = ["Deploys happen on Thursdays.", "The office plant needs water weekly.", "Invoices go out on the 1st."]
        lines = "\n".join(json.dumps({"content": fact}) for fact in facts)
        imported = self.api.post("/api/v1/memories/import", data=lines, content_type="application/x-ndjson")
        assert imported.status_code == 200, imported.content
        assert [r["outcome"] for r in imported.json()["results"]] == ["stored"] * 3
        bad = self.api.post(
            "/api/v1/memories/import", data='{"content": "ok"}\nnot json', content_type="application/x-ndjson"
        )
        assert bad.status_code == 400
        assert self.api.get("/api/v1/memories/count").json() == {"count": 3}
        assert self.api.get("/api/v1/memories/stats").json()["total"] == 3
        exported = self.api.get("/api/v1/memories/export")
        assert exported.status_code == 200
        rows = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
        assert len(rows) == 3
        assert self.api.get("/api/v1/memories/count", {"workspace": "nowhere"}).status_code == 400

    def test_an_empty_choice_is_a_400_not_every_choice(self) -> None:
        """django-filter skips an empty value: "?kind=" listed every kind, as if left out."""
        for path, name in (("/api/v1/sources", "kind"), ("/api/v1/memories", "team"),
                           ("/api/v1/memories", "workspace"), ("/api/v1/memories/count", "workspace"),
                           ("/api/v1/memories", "format")):  # fmt: skip
            answer = self.api.get(path, {name: ""})
            assert answer.status_code == 400, (path, name, answer.status_code)
            assert name in answer.json()["error"]["message"]
        named = self.api.get("/api/v1/sources", {"kind": ""}).json()["error"]["message"]
        assert "choose one of" in named
        assert self.api.get("/api/v1/memories", {"workspace": "company"}).status_code == 200

    def test_the_file_endpoints_refuse_what_they_do_not_read_or_send(self) -> None:
        """An import in another media type was read anyway (stored as if JSON lines), and an
        export asked for as JSON was answered with the file: 415 and 406, as documented."""
        lines = json.dumps({"content": "Deploys happen on Thursdays."})
        for media_type in ("text/plain", "application/json", "application/x-www-form-urlencoded"):
            answer = self.api.post("/api/v1/memories/import", data=lines, content_type=media_type)
            assert answer.status_code == 415, (media_type, answer.status_code)
            assert answer.json()["error"]["code"] == "unsupported_media_type"
        assert self.api.get("/api/v1/memories/count").json() == {"count": 0}
        for path in ("/api/v1/memories/export", "/api/v1/export"):
            refused = self.api.get(path, HTTP_ACCEPT="application/json")
            assert refused.status_code == 406, (path, refused.status_code)
            assert refused.json()["error"]["code"] == "not_acceptable"
            for accept in ("*/*", "application/*"):
                assert self.api.get(path, HTTP_ACCEPT=accept).status_code == 200, (path, accept)

    def test_head_of_the_export_builds_no_archive_and_records_no_export(self) -> None:
        head = self.api.head("/api/v1/export")
        assert head.status_code == 200
        assert not head.streaming  # a server runs a stream through to answer HEAD: no archive at all
        assert head["Content-Type"] == "application/zip"
        assert int(head["X-Brain-Export-Files"]) >= 1
        from grants.models import AuditEvent

        assert not AuditEvent.objects.filter(action="corpus.export").exists()

    def test_upload_a_document_and_watch_its_extraction(self) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from grants.services import grant_issue

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        upload = SimpleUploadedFile("notes.md", b"# Kickoff\n\nWe agreed on Thursdays.\n", content_type="text/markdown")
        with self.captureOnCommitCallbacks(execute=True):
            response = self.api.post("/api/v1/uploads", data={"file": upload, "title": "Kickoff notes"})
        assert response.status_code == 202, response.content
        key = response.json()["key"]
        status = self.api.get(f"/api/v1/sources/{key}/status")
        assert status.status_code == 200
        assert status.json()["title"] == "Kickoff notes"
        # A text field sent as a file part was a 500 (the secret scan got an uploaded file).
        for field in ("key", "title"):
            again = SimpleUploadedFile("notes.md", b"# Again\n\nText.\n", content_type="text/markdown")
            odd = SimpleUploadedFile("k.txt", b"abc")
            response = self.api.post("/api/v1/uploads", data={"file": again, field: odd})
            assert response.status_code == 400, response.content
            assert field in response.json()["error"]["message"]
        missing = self.api.post("/api/v1/uploads", data={"title": "no file"})
        assert missing.status_code == 400
        assert "file" in missing.json()["error"]["message"]
        # Two files: one was kept and the other dropped without a word.
        two = [SimpleUploadedFile(f"{name}.md", b"# Part\n\nText.\n", content_type="text/markdown")
               for name in ("first", "second")]  # fmt: skip
        both = self.api.post("/api/v1/uploads", data={"file": two})
        assert both.status_code == 400
        assert "one file at a time (2 were sent)" in both.json()["error"]["message"]
        memory_only = Client(
            HTTP_AUTHORIZATION=f"Bearer {api_token_issue(actor=self.alice, name='m', scopes=['memory'])[1]}"
        )
        assert memory_only.post("/api/v1/uploads", data={"file": upload}).status_code == 403

    def test_bad_arguments_name_the_field(self) -> None:
        response = self.api.get("/api/v1/search", {"query": "x", "k": "many"})
        assert response.status_code == 400
        body = response.json()
        assert body["error"]["code"] == "invalid"
        assert body["fields"][0]["field"] == "k"
        typo = self.api.get("/api/v1/search", {"qeury": "x"})
        assert typo.status_code == 400
        assert "qeury" in typo.json()["error"]["message"]
        assert self.api.post("/api/v1/memories", data="[1]", content_type="application/json").status_code == 400

    def test_a_question_credential_asks_and_awaits(self) -> None:
        raw = question_credential_issue(actor=SYSTEM, name="bot", member=self.alice)[1]
        bot = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
        with self.captureOnCommitCallbacks(execute=False):
            asked = bot.post("/api/v1/questions", data=json.dumps({"question": "What does the team plan cost?"}),
                             content_type="application/json")  # fmt: skip
        assert asked.status_code == 202, asked.content
        question_id = asked.json()["question_id"]
        waited = bot.get(f"/api/v1/questions/{question_id}", {"wait_seconds": "0"})
        assert waited.status_code == 200
        assert waited.json()["status"] in ("queued", "running", "answered", "refused")

    def test_open_a_build_and_use_its_credential_once_shown(self) -> None:
        opened = self.post("/api/v1/builds", {"title": "Price update", "purpose": "New seat price"})
        assert opened.status_code == 201, opened.content
        body = opened.json()
        assert body["credential"].startswith("bld_")
        agent = Client(HTTP_AUTHORIZATION=f"Bearer {body['credential']}")
        status = agent.get(f"/api/v1/builds/{body['id']}")
        assert status.status_code == 200
        assert status.json()["status"] == "open"
        # The agent's credential is bound to its build: another build is 404, like a missing one.
        other = self.post("/api/v1/builds", {"title": "Other"}).json()["id"]
        assert agent.get(f"/api/v1/builds/{other}").status_code == 404
        assert self.api.get(f"/api/v1/builds/{other}").status_code == 200
        bob_token = api_token_issue(actor=self.bob, name="b", scopes=["builds:write", "corpus:read"])[1]
        bob = Client(HTTP_AUTHORIZATION=f"Bearer {bob_token}")
        assert bob.get(f"/api/v1/builds/{other}").status_code == 404
        # A build's status and diff show live page text: builds:write alone does not read them.
        builds_only = api_token_issue(actor=self.alice, name="builds-only", scopes=["builds:write"])[1]
        narrow = Client(HTTP_AUTHORIZATION=f"Bearer {builds_only}")
        for path in (f"/api/v1/builds/{other}", f"/api/v1/builds/{other}/diff?path=topics/pricing/price-list.md"):
            refused = narrow.get(path)
            assert refused.status_code == 403, path
            assert "corpus:read" in refused.json()["error"]["message"]

    def test_a_refused_credential_leaves_no_open_build_behind(self) -> None:
        """The build and its credential were two transactions: a refusal in the second left an
        open build no agent could write to, listed among the member's builds."""
        from unittest import mock

        from builds.models import Build

        before = Build.objects.count()
        with mock.patch("api.views.build_credential_issue", side_effect=PermissionError("no credentials today")):
            refused = self.post("/api/v1/builds", {"title": "Half made"})
        assert refused.status_code == 403, refused.content
        assert Build.objects.count() == before

    def test_import_a_zip_as_a_build_for_review(self) -> None:
        import io
        import zipfile

        from django.core.files.uploadedfile import SimpleUploadedFile

        from tests.base import page_markdown

        def archive(files: dict[str, str]) -> SimpleUploadedFile:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as zipped:
                for name, text in files.items():
                    zipped.writestr(name, text)
            return SimpleUploadedFile("pages.zip", buffer.getvalue(), content_type="application/zip")

        page = page_markdown(title="Seat prices", body="# Seat prices\n\nTeam plan: 14 EUR a seat.\n")
        with self.captureOnCommitCallbacks(execute=False):
            started = self.api.post(
                "/api/v1/builds/import", data={"archive": archive({"topics/pricing/seats.md": page}), "title": "Seats"}
            )
        assert started.status_code == 202, started.content
        assert started.json()["files"] == 1
        assert self.api.get(started.json()["status_url"]).status_code == 200
        broken = self.api.post("/api/v1/builds/import", data={"archive": archive({"topics/Bad Name.md": page})})
        assert broken.status_code == 400
        assert broken.json()["error"]["code"] == "import_invalid"
        assert "topics/Bad Name.md" in broken.json()["error"]["message"]
        assert self.api.post("/api/v1/builds/import", data={"title": "none"}).status_code == 400

    def test_a_method_an_endpoint_does_not_have_is_405_never_500(self) -> None:
        for method, url in (("get", "/api/v1/sources/notes/x/tags"), ("delete", f"/api/v1/pages/{PRICE_LIST}"),
                            ("patch", "/api/v1/search"), ("put", "/api/v1/memories")):  # fmt: skip
            response = getattr(self.api, method)(url)
            assert response.status_code == 405, (method, url, response.status_code)
        assert self.api.options("/api/v1/search").status_code < 500

    def test_opening_a_build_needs_corpus_read_too(self) -> None:
        builds_only = api_token_issue(actor=self.alice, name="b", scopes=["builds:write"])[1]
        refused = Client(HTTP_AUTHORIZATION=f"Bearer {builds_only}").post(
            "/api/v1/builds", data=json.dumps({"title": "x"}), content_type="application/json"
        )
        assert refused.status_code == 403
        assert "corpus:read" in refused.json()["error"]["message"]

    def test_uploads_and_imports_take_their_own_size_limits(self) -> None:
        from django.test import RequestFactory

        from brain.inputs import GENERAL_BODY_LIMIT, body_limit

        for path in ("/api/v1/uploads", "/api/v1/builds/import"):
            request = RequestFactory().post(path, content_type="multipart/form-data; boundary=x")
            assert body_limit(request) > GENERAL_BODY_LIMIT, path
        assert body_limit(RequestFactory().post("/api/v1/memories/import")) == 5 * 1024 * 1024

    def test_errors_carry_the_request_id_and_no_internals(self) -> None:
        response = Client(HTTP_AUTHORIZATION="Bearer bmt_nope").get("/api/v1/pages")
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        error = response.json()["error"]
        assert error["request_id"] == response["x-request-id"]
        assert set(error) == {"code", "message", "request_id"}


class SchemaTests(BrainTestCase):
    def test_the_openapi_document_is_valid_3_1_and_covers_every_operation(self) -> None:
        response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
        assert response.status_code == 200
        document = json.loads(response.content)
        assert document["openapi"].startswith("3.1")
        validate_schema(document)  # type: ignore[no-untyped-call]
        operations = {op["operationId"] for path in document["paths"].values() for op in path.values()}
        for name in (
            "read_page",
            "list_pages",
            "search",
            "remember",
            "recall",
            "ask",
            "await_answer",
            "open_build",
            "list_memories",
            "list_sources",
            "import_build",
            "upload_source",
        ):
            assert name in operations
        assert set(document["components"]["securitySchemes"]) == {"bearer", "session"}
        search = document["paths"]["/api/v1/search"]["get"]
        assert {p["name"] for p in search["parameters"]} >= {"query", "k", "prefix"}
        assert "corpus:read" in search["description"]
        # Bodies carry what the path does not, and the main operations show an example.
        append = document["paths"]["/api/v1/memories/{id}/append"]["post"]["requestBody"]["content"]["application/json"]
        body = document["components"]["schemas"][append["schema"]["$ref"].rsplit("/", 1)[1]]
        assert "id" not in body["properties"]
        assert body["required"] == ["text"]
        assert append["examples"]
        for path, method in (("/api/v1/memories", "post"), ("/api/v1/questions", "post"), ("/api/v1/builds", "post")):
            assert document["paths"][path][method]["requestBody"]["content"]["application/json"]["examples"], path

    def test_the_docs_ui_loads_everything_from_our_own_origin(self) -> None:
        page = Client().get("/api/v1/docs/")
        assert page.status_code == 200
        html = page.content.decode()
        references = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert references
        for reference in references:
            assert reference.startswith("/"), f"external reference in the docs UI: {reference}"
            if reference.startswith("/static/"):
                assert finders.find(reference.removeprefix("/static/").split("?")[0]), reference
            else:
                assert Client().get(reference).status_code == 200, reference
        assert "<script>" not in html  # the CSP allows no inline script: the split view serves it


class NotFoundShapeTests(BrainTestCase):
    def test_every_operation_on_a_missing_object_answers_the_same_not_found(self) -> None:
        """Enumerated from the OpenAPI document: each operation with a path parameter, on an object
        that does not exist, is a 404 ``not_found`` "Not found." — one shape, whichever view (the
        builds' views raised Django's Http404 and answered "error / The request was not accepted.")."""
        import uuid

        token = api_token_issue(
            actor=self.alice, name="all", scopes=["memory", "corpus:read", "sources:write", "builds:write"]
        )[1]
        api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        document = json.loads(api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
        missing = {"id": str(uuid.uuid4()), "key": "captures/no-such-capture", "path": "topics/no-such-page.md"}
        checked = 0
        for template, methods in document["paths"].items():
            names = re.findall(r"{(\w+)}", template)
            if not names:
                continue
            path = template
            for name in names:
                path = path.replace("{" + name + "}", missing.get(name, str(uuid.uuid4())))
            for method in methods:
                if method not in ("get", "post", "patch", "delete"):
                    continue
                response = api.generic(method.upper(), path, data="{}", content_type="application/json")
                with self.subTest(operation=f"{method.upper()} {template}"):
                    # An empty body may be refused first (400 naming the field: the same for any id).
                    assert response.status_code in (400, 404), (response.status_code, response.content[:200])
                    error = response.json()["error"]
                    if response.status_code == 404:
                        assert (error["code"], error["message"]) == ("not_found", "Not found."), error
                        checked += 1
                    else:
                        assert error["code"] == "invalid", error
        assert checked >= 10, checked


class QueryParameterTests(RestCase):
    def test_every_get_and_delete_refuses_a_query_parameter_it_does_not_document(self) -> None:
        """Enumerated from the OpenAPI document: each GET and DELETE answers ``?bogus=1`` with a 400
        naming it (the lists and the export ignored it: ``?prefx=`` listed everything), and each
        documented parameter is accepted by name."""
        document = json.loads(self.api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
        checked = 0
        samples = {"path": PRICE_LIST, "question_id": "1"}
        for template, methods in document["paths"].items():
            path = re.sub(r"{(\w+)}", lambda found: samples.get(found.group(1), "x"), template)
            for method in ("get", "delete"):
                if method not in methods:
                    continue
                with self.subTest(operation=f"{method.upper()} {template}"):
                    response = self.api.generic(method.upper(), path + "?bogus=1&prefx=topics/")
                    assert response.status_code == 400, (response.status_code, response.content[:200])
                    assert "Unknown query parameter(s): bogus, prefx." in response.json()["error"]["message"]
                    checked += 1
                    documented = [p["name"] for p in methods[method].get("parameters", []) if p["in"] == "query"]
                    for name in documented:
                        answer = self.api.generic(method.upper(), f"{path}?{name}=")
                        body = b"" if answer.streaming else answer.content  # a stream is an accepted request
                        assert b"Unknown query parameter" not in body, (name, body[:200])
        assert checked >= 15, checked

    def test_a_page_size_outside_1_to_200_is_refused(self) -> None:
        for limit in ("0", "abc", "201", "-1", "²"):
            response = self.api.get("/api/v1/pages", {"limit": limit})
            assert response.status_code == 400, limit
            assert "limit must be a whole number from 1 to 200" in response.json()["error"]["message"]
        assert self.api.get("/api/v1/pages", {"limit": "200"}).status_code == 200
