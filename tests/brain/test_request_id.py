from __future__ import annotations

import logging
import uuid

from django.http import HttpRequest, HttpResponse
from django.test import Client, TestCase, override_settings
from django.urls import path

from brain.urls import urlpatterns as project_urls


def _explode(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("SELECT secret FROM /srv/brain/internal.py")


urlpatterns = [*project_urls, path("api/explode", _explode), path("explode", _explode)]
handler500 = "brain.errors.server_error"
handler404 = "brain.errors.page_not_found"
handler400 = "brain.errors.bad_request"


@override_settings(ROOT_URLCONF="tests.brain.test_request_id")
class RequestIdTests(TestCase):
    def setUp(self) -> None:
        self.client = Client(raise_request_exception=False)

    def assert_uuid(self, value: str) -> None:
        assert uuid.UUID(value).version == 4

    def test_ok_response_has_new_request_id(self) -> None:
        response = self.client.get("/healthz")
        self.assert_uuid(response["x-request-id"])

    def test_not_found_has_request_id(self) -> None:
        response = self.client.get("/no/such/page")
        assert response.status_code == 404
        self.assert_uuid(response["x-request-id"])

    def test_server_error_has_request_id_and_leaks_nothing(self) -> None:
        with self.assertLogs("brain.request", level="ERROR"):
            response = self.client.get("/api/explode")
        assert response.status_code == 500
        body = response.json()
        assert body["error"]["code"] == "internal_error"
        assert body["error"]["request_id"] == response["x-request-id"]
        text = response.content.decode()
        for leak in ("SELECT", "/srv", "internal.py", "Traceback", "RuntimeError"):
            assert leak not in text

    def test_html_server_error_leaks_nothing(self) -> None:
        with self.assertLogs("brain.request", level="ERROR"):
            response = self.client.get("/explode")
        assert response.status_code == 500
        assert response["x-request-id"] in response.content.decode()
        assert "Traceback" not in response.content.decode()
        assert "internal.py" not in response.content.decode()

    def test_disallowed_host_400_has_request_id(self) -> None:
        with self.assertLogs("django.security.DisallowedHost", level="WARNING"):
            response = self.client.get("/healthz", HTTP_HOST="evil.example")
        assert response.status_code == 400
        self.assert_uuid(response["x-request-id"])

    def test_well_formed_incoming_id_is_kept(self) -> None:
        response = self.client.get("/healthz", HTTP_X_REQUEST_ID="req-0123456789abcdef")
        assert response["x-request-id"] == "req-0123456789abcdef"

    def test_malformed_incoming_id_is_replaced(self) -> None:
        for bad in ("short", "has space in it 123", "x" * 300, "<script>alert(1)</script>"):
            response = self.client.get("/healthz", HTTP_X_REQUEST_ID=bad)
            self.assert_uuid(response["x-request-id"])

    def test_log_lines_of_a_request_carry_its_id(self) -> None:
        records: list[logging.LogRecord] = []

        class Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                records.append(record)

        from brain.logging import RequestIdFilter

        handler = Capture()
        handler.addFilter(RequestIdFilter())
        logger = logging.getLogger("brain.request")
        logger.addHandler(handler)
        try:
            response = self.client.get("/api/explode")
        finally:
            logger.removeHandler(handler)
        assert records
        assert all(getattr(r, "request_id", None) == response["x-request-id"] for r in records)

    def test_json_formatter_emits_request_id(self) -> None:
        import json

        from brain.logging import JsonFormatter

        record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello %s", ("world",), None)
        record.request_id = "req-12345678"
        line = json.loads(JsonFormatter().format(record))
        assert line["message"] == "hello world"
        assert line["request_id"] == "req-12345678"
        assert line["level"] == "INFO"
