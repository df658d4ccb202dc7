"""A write with a stale copy of its member never lands after that member was offboarded.

Background paths (a calendar refresh, an import, a mail being read) hold the member they
loaded minutes ago. Offboarding deletes the personal layer and the person's preferences; a
write that went on with the old copy landed in the deleted layer — or, the preference gone,
in the team's default layer, publishing a private event to everyone.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.core.exceptions import PermissionDenied
from django.test import TestCase

from accounts.services import member_offboard, member_suspend
from grants.principals import SYSTEM
from grants.services import member_create
from memory import calendars
from memory.calendar_fetch import Fetched
from memory.models import CalendarSubscription, Memory
from memory.preferences import memory_preferences_save, team_memory_settings_save
from memory.services import memory_remember, memory_update

ICS = b"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//test//EN\r
BEGIN:VEVENT\r
UID:one@example.org\r
DTSTART:20260310T140000Z\r
DTEND:20260310T150000Z\r
SUMMARY:Private 1:1 with my manager about my health leave\r
END:VEVENT\r
END:VCALENDAR\r
"""


class OffboardingRaceTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.owner = member_create(actor=SYSTEM, username="owner", role="owner")
        cls.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com")

    def refresh_while_offboarded(self) -> None:
        subscription = CalendarSubscription.objects.create(
            member=self.alice, name="Work", url="https://cal.example.org/a.ics"
        )
        in_flight = CalendarSubscription.objects.select_related("member").get(pk=subscription.pk)

        def fetch_while_offboarded(*args: Any, **kwargs: Any) -> Fetched:
            member_offboard(actor=self.owner, member=self.alice, send_export=False)
            return Fetched(not_modified=False, body=ICS, etag="", last_modified="")

        with mock.patch.object(calendars, "fetch_calendar", fetch_while_offboarded):
            calendars.calendar_refresh(in_flight)

    def test_a_refresh_that_outlived_its_member_stores_nothing_in_the_deleted_layer(self) -> None:
        self.refresh_while_offboarded()
        assert not Memory.objects.filter(author=self.alice).exists()

    def test_nor_in_the_shared_layer_once_the_persons_preference_is_gone(self) -> None:
        team_memory_settings_save(actor=SYSTEM, default_workspace="company", default_tags=[], shared_insights=False)
        memory_preferences_save(actor=self.alice, default_workspace="personal", default_tags=[],
                                weekly_insights=False, insights_delivery="dashboard")  # fmt: skip
        self.refresh_while_offboarded()
        assert not Memory.objects.filter(author=self.alice, workspace="company").exists()

    def test_a_stale_copy_of_a_suspended_member_writes_and_edits_nothing(self) -> None:
        kept = memory_remember(actor=self.alice, content="We ship on Thursdays.", workspace="company").memory
        stale = self.alice  # loaded before the suspension, still is_active in memory
        member_suspend(actor=self.owner, member=stale.__class__.objects.get(pk=stale.pk))
        with pytest.raises(PermissionDenied):
            memory_remember(actor=stale, content="The office opens at nine.", workspace="personal")
        with pytest.raises(PermissionDenied):
            memory_update(actor=stale, memory_id=kept.pk, content="We ship on Fridays.")
        assert list(Memory.objects.filter(author=self.alice).values_list("content", flat=True)) == [
            "We ship on Thursdays."
        ]
