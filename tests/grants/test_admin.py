"""The admin administers grants through the services and shows no content."""

from __future__ import annotations

from django.contrib import admin

from corpus.models import Chunk, Page, Revision, Source
from grants.models import AuditEvent, Grant
from tests.base import BrainTestCase


class AdminTests(BrainTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)

    def test_no_content_models_are_registered(self) -> None:
        for model in (Page, Revision, Chunk, Source):
            assert not admin.site.is_registered(model)

    def test_grant_form_shows_scope_errors(self) -> None:
        response = self.client.post(
            "/admin/grants/grant/add/",
            {"member": self.bob.pk, "path": "Topics//x/", "permission": 1},
        )
        assert response.status_code == 200
        assert "must be lower-case" in response.content.decode()
        response = self.client.post(
            "/admin/grants/grant/add/",
            {"member": self.bob.pk, "path": "topics/", "category": "pricing", "permission": 1},
        )
        assert "exactly one scope" in response.content.decode()

    def test_grant_added_through_the_service_is_audited(self) -> None:
        response = self.client.post(
            "/admin/grants/grant/add/", {"member": self.bob.pk, "category": "pricing", "permission": 2}
        )
        assert response.status_code == 302
        grant = Grant.objects.get(member=self.bob, category="pricing")
        event = AuditEvent.objects.get(action="grant.issue", target=str(grant.pk))
        assert event.actor_label == "charlie"

    def test_plain_member_cannot_open_the_admin_models(self) -> None:
        self.client.force_login(self.bob.user)
        assert self.client.get("/admin/grants/grant/").status_code == 302

    def test_audit_log_is_read_only(self) -> None:
        response = self.client.get("/admin/grants/auditevent/")
        assert response.status_code == 200
        assert self.client.get("/admin/grants/auditevent/add/").status_code == 403
