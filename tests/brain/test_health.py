from __future__ import annotations

import socket

from django.test import TestCase, override_settings

import brain
from grants.models import Member
from grants.principals import SYSTEM
from grants.services import member_create


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
        assert body["pgvector"] == "ok"
        assert response["cache-control"].startswith("max-age=0")

    def test_anyone_learns_up_or_down_and_nothing_more(self) -> None:
        body = self.client.get("/healthz").json()
        assert set(body) == {"ok", "database", "pgvector", "redis", "broker", "cache"}
        assert set(body.values()) <= {True, "ok"}
        # A wrong or missing token, and an ordinary member signed in, see the same.
        with override_settings(BRAIN_HEALTH_TOKEN="t" * 40):
            for header in ("Bearer " + "u" * 40, "Bearer ", "Basic " + "t" * 40, "t" * 40):
                assert self.client.get("/healthz", HTTP_AUTHORIZATION=header).json() == body
        self.client.force_login(member_create(actor=SYSTEM, username="reader").user)
        assert self.client.get("/healthz").json() == body

    def test_the_details_go_to_a_monitor_with_the_token_and_to_administrators(self) -> None:
        with override_settings(BRAIN_HEALTH_TOKEN="t" * 40):
            body = self.client.get("/healthz", HTTP_AUTHORIZATION="Bearer " + "t" * 40).json()
        assert body["version"] == brain.__version__
        assert body["pgvector"].count(".") >= 1
        # No token configured: an empty bearer is not it.
        assert "version" not in self.client.get("/healthz", HTTP_AUTHORIZATION="Bearer ").json()
        admin = member_create(actor=SYSTEM, username="admin", role=Member.Role.ADMIN)
        self.client.force_login(admin.user)
        assert self.client.get("/healthz").json()["version"] == brain.__version__

    def test_503_naming_redis_when_broker_down(self) -> None:
        with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{_closed_port()}/0"):
            response = self.client.get("/healthz")
        assert response.status_code == 503
        body = response.json()
        assert body["ok"] is False
        assert body["broker"] == "down"
        assert body["database"] == "ok"
        assert body["down"] == ["broker"]
