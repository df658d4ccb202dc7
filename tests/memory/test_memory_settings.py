"""Capture defaults: a member's own, the team's (administrators), and every capture path honouring them."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied
from django.test import TestCase, override_settings

from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import member_create
from memory.classify import MemoryInvalid
from memory.models import Memory, TeamMemorySettings
from memory.preferences import memory_preferences_save, team_memory_settings_save
from memory.services import capture_defaults, memory_capture_from, memory_remember
from memory.tokens import api_token_issue


class CaptureDefaultsTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com")
        cls.bob = member_create(actor=SYSTEM, username="bob")
        cls.admin = member_create(actor=SYSTEM, username="charlie", role="admin")

    @override_settings(BRAIN_MEMORY_DEFAULT_WORKSPACE="personal")
    def test_member_then_team_then_deployment_decide_the_layer_and_tags_add_up(self) -> None:
        assert capture_defaults(self.alice).workspace == "personal"
        team_memory_settings_save(actor=self.admin, default_workspace="company", default_tags="team, Ops",
                                  shared_insights=False)  # fmt: skip
        assert capture_defaults(self.bob).workspace == "company"
        memory_preferences_save(actor=self.alice, default_workspace="personal", default_tags=["inbox"],
                                weekly_insights=False, insights_delivery="dashboard")  # fmt: skip
        mine = capture_defaults(self.alice)
        assert (mine.workspace, mine.tags) == ("personal", ["team", "ops", "inbox"])
        stored = memory_remember(actor=self.alice, content="The VPN config lives in the ops vault.", tags=["vpn"])
        assert stored.memory.workspace == "personal"
        assert stored.memory.tags == ["vpn", "team", "ops", "inbox"]
        named = memory_remember(actor=self.alice, content="Lunch orders close at 11.", workspace="company")
        assert named.memory.workspace == "company"  # a named layer wins over every default
        imported = memory_capture_from(actor=self.bob, origin="test:1", content="Quarter closes on the 30th.",
                                       source="test")  # fmt: skip
        assert (imported.memory.workspace, imported.memory.tags) == ("company", ["team", "ops"])

    def test_only_an_administrator_changes_the_team_settings_and_it_is_audited(self) -> None:
        with pytest.raises(PermissionDenied, match="administrator"):
            team_memory_settings_save(actor=self.bob, default_workspace="company", default_tags="",
                                      shared_insights=True)  # fmt: skip
        assert not TeamMemorySettings.objects.exists()
        self.client.force_login(self.bob.user)
        answer = self.client.post("/memory/settings/", {"form": "team", "default_workspace": "company"})
        assert answer.status_code == 403  # the page again, saying only an administrator may
        assert not TeamMemorySettings.objects.exists()
        self.client.force_login(self.admin.user)
        self.client.post("/memory/settings/", {"form": "team", "default_workspace": "company",
                                               "default_tags": "handbook", "shared_insights": "on"})  # fmt: skip
        row = TeamMemorySettings.objects.get()
        assert (row.default_workspace, row.default_tags, row.shared_insights) == ("company", ["handbook"], True)
        event = AuditEvent.objects.get(action="memory.team_settings")
        assert event.metadata["after"] == {"layer": "company", "tags": 1, "insights": True}

    def test_a_member_edits_their_defaults_on_the_settings_page_with_clear_errors(self) -> None:
        self.client.force_login(self.alice.user)
        page = self.client.get("/memory/settings/").content.decode()
        assert "Captures land in" in page
        assert "Save the team" not in page
        self.client.post("/memory/settings/", {"form": "mine", "default_workspace": "company",
                                               "default_tags": "inbox, Reading", "weekly_insights": "on",
                                               "insights_delivery": "email"})  # fmt: skip
        assert capture_defaults(self.alice).workspace == "company"
        assert capture_defaults(self.alice).tags == ["inbox", "reading"]
        refused = self.client.post("/memory/settings/", {"form": "mine", "default_workspace": "team",
                                                         "insights_delivery": "dashboard"}, follow=True)  # fmt: skip
        assert "default layer must be &quot;personal&quot;" in refused.content.decode()
        assert capture_defaults(self.alice).workspace == "company"  # nothing half saved
        with pytest.raises(MemoryInvalid, match="Slack account linked"):
            memory_preferences_save(actor=self.alice, default_workspace="", default_tags="",
                                    weekly_insights=True, insights_delivery="slack")  # fmt: skip
        with pytest.raises(MemoryInvalid, match="status"):
            memory_preferences_save(actor=self.alice, default_workspace="", default_tags="status:canonical",
                                    weekly_insights=False, insights_delivery="dashboard")  # fmt: skip

    def test_the_rest_capture_path_honours_the_defaults(self) -> None:
        memory_preferences_save(actor=self.alice, default_workspace="company", default_tags="inbox",
                                weekly_insights=False, insights_delivery="dashboard")  # fmt: skip
        token = api_token_issue(actor=self.alice, name="cli")[1]
        answer = self.client.post("/api/memory/capture", data=json.dumps({"content": "Wiki moved to Confluence."}),
                                  content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert answer.status_code == 201
        memory = Memory.objects.get(author=self.alice)
        assert (memory.workspace, memory.tags) == ("company", ["inbox"])

    def test_the_team_settings_in_the_django_admin(self) -> None:
        self.client.force_login(self.admin.user)
        listing = self.client.get("/admin/memory/teammemorysettings/")
        assert listing.status_code == 302
        assert listing["Location"].endswith("/1/change/")
        form = {"default_workspace": "personal", "default_tags": "kb", "shared_insights": ""}
        saved = self.client.post("/admin/memory/teammemorysettings/1/change/", form)
        assert saved.status_code == 302, saved.content.decode()[:2000]
        row = TeamMemorySettings.objects.get()
        assert (row.default_workspace, row.default_tags) == ("personal", ["kb"])
        assert AuditEvent.objects.filter(action="memory.team_settings").count() == 1
        # A refused value is an error beside its field, the form keeps what was typed, nothing saved.
        refused = {
            "default_workspace": "company",
            "default_tags": "onboarding,status:canonical",
            "shared_insights": "on",
        }
        response = self.client.post("/admin/memory/teammemorysettings/1/change/", refused)
        assert response.status_code == 200
        html = response.content.decode()
        assert "a default tag cannot set a status" in html
        assert "onboarding,status:canonical" in html
        assert TeamMemorySettings.objects.get().default_tags == ["kb"]
        assert AuditEvent.objects.filter(action="memory.team_settings").count() == 1
        # A secret in a default tag: an error beside the field (a bare 400 page before), never echoed.
        token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        leaky = {**refused, "default_tags": f"onboarding,{token}"}
        response = self.client.post("/admin/memory/teammemorysettings/1/change/", leaky)
        assert response.status_code == 200
        assert "GitHub" in response.content.decode() or "secret" in response.content.decode()
        assert token not in response.content.decode()
        self.client.force_login(self.bob.user)
        assert self.client.get("/admin/memory/teammemorysettings/1/change/").status_code in (302, 403)
