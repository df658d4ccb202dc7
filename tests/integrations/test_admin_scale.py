"""The integration secrets list runs the same queries for a few secrets or many."""

from __future__ import annotations

import base64

from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from grants.principals import SYSTEM
from grants.services import member_create
from integrations.secrets import secret_set
from tests.base import BrainTestCase

KEY = "1:" + base64.b64encode(b"k" * 32).decode()


@override_settings(BRAIN_SECRETS_KEYS=KEY)
class SecretListTests(BrainTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)
        self.made = 0

    def add_secrets(self, n: int) -> None:
        """``n`` secrets, each last set by a different administrator (and one by the system)."""
        for _ in range(n):
            self.made += 1
            setter = member_create(actor=SYSTEM, username=f"keeper{self.made}", role="admin")
            secret_set(actor=setter, name=f"secret_{self.made}", value="s3cr3t value")
        secret_set(actor=SYSTEM, name=f"system_secret_{self.made}", value="s3cr3t value")

    def list_queries(self) -> tuple[str, int]:
        with CaptureQueriesContext(connection) as captured:
            response = self.client.get("/admin/integrations/integrationsecret/")
        assert response.status_code == 200
        return response.content.decode(), len(captured.captured_queries)

    def test_the_list_does_not_query_per_secret(self) -> None:
        self.add_secrets(2)
        _, few = self.list_queries()
        self.add_secrets(6)
        body, many = self.list_queries()
        assert "keeper8" in body
        assert "secret_8" in body
        assert "s3cr3t" not in body
        assert many == few
