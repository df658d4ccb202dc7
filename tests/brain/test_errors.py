from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from django.test import TestCase


class ErrorBodyTests(TestCase):
    def test_json_404_shape(self) -> None:
        response = self.client.get("/api/does-not-exist")
        assert response.status_code == 404
        assert response["content-type"] == "application/json"
        body = response.json()
        assert set(body) == {"error"}
        assert set(body["error"]) == {"code", "message", "request_id"}
        assert body["error"]["code"] == "not_found"
        assert body["error"]["request_id"] == response["x-request-id"]

    def test_html_404_for_browsers(self) -> None:
        response = self.client.get("/no-such-page", HTTP_ACCEPT="text/html")
        assert response.status_code == 404
        assert "text/html" in response["content-type"]
        assert response["x-request-id"] in response.content.decode()

    def test_json_404_when_client_asks_for_json(self) -> None:
        response = self.client.get("/no-such-page", HTTP_ACCEPT="application/json")
        assert response.json()["error"]["code"] == "not_found"

    def test_method_not_allowed_on_healthz(self) -> None:
        response = self.client.post("/healthz")
        assert response.status_code == 405


class DomainErrorTranslationTests(TestCase):
    """One mapping (brain.domain.problem_for), one translator per transport; here the web's."""

    def translate(self, path: str, exception: Exception) -> Any:
        from django.test import RequestFactory

        from brain.middleware import DomainErrorMiddleware

        request = RequestFactory().get(path)
        return DomainErrorMiddleware(lambda r: HttpResponse()).process_exception(request, exception)

    def test_refusals_escaping_a_web_view_get_their_status_and_safe_message(self) -> None:
        from django.core.exceptions import ValidationError

        from corpus.frontmatter import PageInvalid, Problem
        from corpus.models import Page
        from memory.classify import MemoryInvalid

        page = self.translate("/pages/x", PageInvalid([Problem("title", "a title is required")]))
        assert page.status_code == 400
        assert "The page is not valid: title: a title is required" in page.content.decode()
        assert self.translate("/pages/x", Page.DoesNotExist()).status_code == 404
        assert self.translate("/memory/", ValidationError("bad")).status_code == 400
        api = self.translate("/api/memory/entries", MemoryInvalid("content is empty"))
        assert api.status_code == 400
        error = json.loads(api.content)["error"]
        assert (error["code"], error["message"]) == ("invalid", "content is empty")

    def test_bugs_are_not_translated(self) -> None:
        assert self.translate("/pages/x", RuntimeError("boom")) is None

    def test_a_request_past_the_databases_limits_is_a_400_not_an_outage(self) -> None:
        import psycopg
        from django.db import OperationalError

        from brain.domain import problem_for

        for cause in (psycopg.errors.lookup("54001")("stack depth limit exceeded"),):
            wrapped = OperationalError("stack depth limit exceeded")
            wrapped.__cause__ = cause
            for error in (cause, wrapped):
                problem = problem_for(error)
                assert problem is not None
                assert (problem.status, problem.code, problem.retry_after) == (400, "too_complex", None)
        # A lost connection is still an outage (503, retry).
        lost = problem_for(OperationalError("connection to server was lost"))
        assert lost is not None
        assert (lost.status, lost.retry_after) == (503, 10)

    def test_a_nul_that_reaches_the_database_is_the_clients_400_other_data_errors_stay_bugs(self) -> None:
        from django.db import connection

        from brain.domain import problem_for
        from corpus.models import Page

        try:  # the real exception, as psycopg raises it through Django
            Page.objects.filter(path="topics/a\x00b.md").exists()
        except Exception as exc:  # whatever it is, it is what a view would see
            caught: Exception = exc
        else:
            raise AssertionError("PostgreSQL took a NUL")
        problem = problem_for(caught)
        assert problem is not None
        assert (problem.status, problem.code) == (400, "invalid")
        assert "NUL character" in problem.message
        with connection.cursor() as cursor, self.assertRaises(Exception) as raised:  # noqa: PT027
            cursor.execute("SELECT 1 / 0")
        assert problem_for(raised.exception) is None

    def test_a_signed_out_htmx_request_is_sent_to_sign_in_whole(self) -> None:
        # Followed as a redirect, the sign-in page was swapped into the polling part.
        for path in ("/ask/1", "/memory/"):
            answer = self.client.get(path, HTTP_HX_REQUEST="true")
            assert answer.status_code == 204, (path, answer.status_code)
            assert answer["HX-Redirect"].startswith("/login/?next=")
            assert self.client.get(path).status_code == 302  # a plain request: the usual redirect
