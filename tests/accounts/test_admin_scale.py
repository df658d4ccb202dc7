"""Suspend and offboard in the admin name who carries the builds on through a search, not a
list of every member, under the same rules as before."""

from __future__ import annotations

import re

from django.test import Client

from accounts.services import member_suspend
from builds.models import Build
from builds.services import build_open
from grants.models import Member
from grants.principals import SYSTEM
from grants.services import member_create
from tests.base import BrainTestCase


def reassign_options(html: str) -> list[str]:
    select = re.search(r'<select[^>]*name="reassign_to"[^>]*>(.*?)</select>', html, re.S)
    assert select is not None, "no reassign_to select"
    return [value for value in re.findall(r'<option value="([^"]*)"', select.group(1)) if value]


class HandOverPickerTests(BrainTestCase):
    def setUp(self) -> None:
        self.admin = Client()
        self.admin.force_login(self.charlie.user)
        self.people = [member_create(actor=SYSTEM, username=f"person{number}") for number in range(20)]

    def test_suspend_and_offboard_pages_list_no_members(self) -> None:
        for view in ("suspend", "offboard"):
            page = self.admin.get(f"/admin/grants/member/{self.bob.pk}/{view}/").content.decode()
            assert reassign_options(page) == [], view
            assert "admin-autocomplete" in page
            assert 'data-field-name="requester"' in page
            # The lifecycle templates print the form's media: the picker's scripts and styles.
            assert "admin/js/autocomplete.js" in page
            assert "select2" in page
        # A refused submit shows the chosen member again, and only them.
        page = self.admin.post(
            f"/admin/grants/member/{self.bob.pk}/offboard/", {"builds": "reassign", "reassign_to": self.alice.pk}
        ).content.decode()
        assert "Tick this box" in page
        assert reassign_options(page) == [str(self.alice.pk)]

    def test_the_search_offers_active_members_only(self) -> None:
        member_suspend(actor=SYSTEM, member=self.people[1])
        found = self.admin.get(
            "/admin/autocomplete/",
            {"app_label": "builds", "model_name": "build", "field_name": "requester", "term": "person1"},
        )
        assert found.status_code == 200
        names = {item["text"] for item in found.json()["results"]}
        assert "person10" in names
        assert "person19" in names
        assert "person1" not in names  # suspended
        # The grant form's member search (another source field) still lists every member.
        found = self.admin.get(
            "/admin/autocomplete/",
            {"app_label": "grants", "model_name": "grant", "field_name": "member", "term": "person1"},
        )
        assert "person1" in {item["text"] for item in found.json()["results"]}

    def test_the_hand_over_rules_still_hold(self) -> None:
        build = build_open(actor=self.bob, title="Bob's edits")
        suspended = self.people[2]
        member_suspend(actor=SYSTEM, member=suspended)
        url = f"/admin/grants/member/{self.bob.pk}/suspend/"
        for refused in (suspended.pk, self.bob.pk, "abc", "99999999", "²"):
            response = self.admin.post(url, {"builds": "reassign", "reassign_to": refused})
            assert response.status_code == 200, refused
            assert "Select a valid choice" in response.content.decode(), refused
            assert Member.objects.get(pk=self.bob.pk).is_active
        done = self.admin.post(url, {"builds": "reassign", "reassign_to": self.people[0].pk})
        assert done.status_code == 302
        build.refresh_from_db()
        assert build.requester_id == self.people[0].pk
        assert build.status == Build.Status.OPEN
        assert not Member.objects.get(pk=self.bob.pk).is_active
