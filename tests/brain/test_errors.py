from __future__ import annotations

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
