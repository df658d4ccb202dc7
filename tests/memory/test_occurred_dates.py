"""When a memory happened: a date no database read can hold never gets stored, on any path.

9999-12-31T23:59:59-14:00 is year 10000 in UTC. It was stored, and from then on every read of
that member's memories — and of the team layer's, once shared — failed.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import TestCase, override_settings

from brain.text.secrets import SecretRefused
from grants.principals import SYSTEM
from grants.services import member_create
from memory.calendars import calendar_import, calendar_subscribe
from memory.classify import MemoryInvalid
from memory.mail_message import parse_mail
from memory.models import Memory
from memory.recall import memory_list_recent
from memory.services import memory_remember
from memory.vaults import obsidian_import

FAR = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.timezone(dt.timedelta(hours=-14)))
EARLY = dt.datetime(1, 1, 1, 0, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=14)))


class OccurredDateTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")

    def test_the_service_refuses_it_by_name_and_reads_keep_working(self) -> None:
        for when in (FAR, EARLY, dt.datetime(999, 1, 1, tzinfo=dt.UTC)):
            with pytest.raises(MemoryInvalid, match="occurred_at must be between the years 1000 and 2999"):
                memory_remember(actor=self.alice, content=f"Launch {when.year}", workspace="company", occurred_at=when)
        fine = dt.datetime(2026, 3, 10, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
        memory_remember(actor=self.alice, content="Pricing review", occurred_at=fine)
        naive = memory_remember(actor=self.alice, content="Kick-off", occurred_at=dt.datetime(2026, 1, 5, 9, 0))
        assert naive.memory.occurred_at == dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
        assert len(memory_list_recent(actor=self.alice, n=10)) == 2

    def test_a_mail_date_no_memory_may_carry_is_no_date(self) -> None:
        raw = (
            b"From: alice@example.com\r\nTo: inbox@brain.example.org\r\nSubject: Note\r\n"
            b"Date: Fri, 31 Dec 9999 23:59:59 -1400\r\nMessage-ID: <far@example.com>\r\n\r\nBody.\r\n"
        )
        assert parse_mail(raw).sent_at is None
        assert parse_mail(raw.replace(b"9999", b"2026")).sent_at is not None

    def test_an_obsidian_date_no_memory_may_carry_is_left_out(self) -> None:
        note = b"---\noccurred: 9999-12-31T23:59:59-14:00\n---\nThe launch plan.\n"
        obsidian_import(actor=self.alice, files={"plan.md": note}, vault="V")
        memory = Memory.objects.get(author=self.alice)
        assert memory.occurred_at is None
        assert "launch plan" in memory.content

    def test_a_calendar_event_past_the_years_is_skipped_by_name_and_the_others_imported(self) -> None:
        def event(uid: str, start: str, end: str) -> str:
            lines = [f"UID:{uid}", f"DTSTART;TZID=Pacific/Kiritimati:{start}", f"DTEND:{end}", f"SUMMARY:{uid}"]
            return "\n".join(["BEGIN:VEVENT", *lines, "END:VEVENT"])

        data = "\n".join([
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Example//EN",
            event("first", "20260101T090000", "20260101T100000Z"),
            event("overflowing", "20260101T000000", "99991231T235959Z"),
            event("far", "99991231T235959", "99991231T235959Z"),
            event("last", "20260102T090000", "20260102T100000Z"),
            "END:VCALENDAR",
        ]).replace("\n", "\r\n").encode()  # fmt: skip
        result = calendar_import(actor=self.alice, data=data, source_name="work.ics", workspace=None)
        assert result.stored == 2
        reasons = {skipped.reason for skipped in result.skipped}
        assert len(result.skipped) == 2, result.skipped
        assert any("outside the years" in reason or "between the years" in reason for reason in reasons), reasons
        assert len(memory_list_recent(actor=self.alice, n=10)) == 2

    def test_a_calendar_subscription_name_holding_a_key_is_refused(self) -> None:
        with override_settings(BRAIN_CALENDAR_ALLOW_PRIVATE=True), pytest.raises(SecretRefused, match="name refused"):
            calendar_subscribe(
                actor=self.alice, url="http://127.0.0.1:9/team.ics", name="Team AKIAIOSFODNN7EXAMPLQ", workspace=None
            )
