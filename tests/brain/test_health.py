from __future__ import annotations

import socket

from django.test import TestCase, override_settings

import brain


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HealthzTests(TestCase):
    def test_all_up(self) -> None:
        response = self.client.get("/healthz")
        assert response.status_code == 200
        body = response.json()
        assert body["ok"] is True
        assert body["database"] == "ok"
        assert body["broker"] == "ok"
        assert body["pgvector"].count(".") >= 1
        assert body["version"] == brain.__version__
        assert response["cache-control"].startswith("max-age=0")

    def test_503_naming_redis_when_broker_down(self) -> None:
        with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{_closed_port()}/0"):
            response = self.client.get("/healthz")
        assert response.status_code == 503
        body = response.json()
        assert body["ok"] is False
        assert body["broker"] == "down"
        assert body["database"] == "ok"
        assert body["down"] == ["broker"]
