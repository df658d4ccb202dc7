"""Weekly insights: what a week of one layer holds, who sees it, and how it is delivered."""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest import mock
from urllib.parse import parse_qs

import pytest
from django.core import mail
from django.test import TestCase, TransactionTestCase, override_settings
from django.utils import timezone

from grants.principals import SYSTEM
from grants.services import member_create
from integrations.secrets import secret_set
from memory.insights import insights_run, last_full_week, summarise
from memory.models import LinkType, Memory, MemoryInsight, MemoryLink, Provenance
from memory.preferences import memory_preferences_save, team_memory_settings_save
from memory.recall import memory_recall
from memory.services import apply_contradiction, memory_remember, memory_set_status
from tests.fakes import respond

KEY = "1:" + base64.b64encode(b"i" * 32).decode()


class FakeSlackApi:
    """A local stand-in for Slack's Web API: records chat.postMessage calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"])).decode()
                body = json.loads(raw) if raw.startswith("{") else {k: v[0] for k, v in parse_qs(raw).items()}
                owner.calls.append({"path": self.path, "auth": self.headers["Authorization"], **body})
                respond(self, 200, "application/json", b'{"ok": true, "channel": "D1", "ts": "1.0"}')

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"


@override_settings(BRAIN_SECRETS_KEYS=KEY)
class InsightTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com")
        cls.bob = member_create(actor=SYSTEM, username="bob", email="bob@example.com")
        cls.admin = member_create(actor=SYSTEM, username="charlie", role="admin")

    def setUp(self) -> None:
        # "Next week": the week that holds today is then the last full one.
        self.later = timezone.now() + dt.timedelta(days=7)
        self.week = last_full_week(self.later)

    def remember(self, who: Any, text: str, **extra: Any) -> Memory:
        return memory_remember(actor=who, content=text, **extra).memory

    def test_a_week_of_one_personal_layer(self) -> None:
        new = self.remember(self.alice, "The Lisbon offsite is booked for the second week of May.", importance=5)
        old = self.remember(self.alice, "Expense reports go to Dana.")
        Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=40))
        stale = self.remember(self.alice, "The build server is currently flaky.", volatility="volatile")
        Memory.objects.filter(pk=stale.pk).update(
            created_at=timezone.now() - dt.timedelta(days=70), updated_at=timezone.now() - dt.timedelta(days=60)
        )
        first = self.remember(self.alice, "Payroll runs on the 25th of each month.")
        flagged = memory_remember(actor=self.alice, content="Payroll runs on the 25th of every month, always.").memory
        assert "duplicate-candidate" in flagged.tags
        shipped = self.remember(self.alice, "We ship on Thursdays.")
        newer = self.remember(self.alice, "We ship on Fridays now.")
        apply_contradiction(actor=self.alice, new=newer, old=shipped)
        # Changed this week: old was created 40 days ago and is saved now.
        memory_set_status(actor=self.alice, memory_id=old.pk, status="canonical")
        memory_recall(actor=self.alice, query="when is the offsite")
        for text in ("I am Alice and I work on billing.", "My name is Alice; I lead the data team in Lisbon."):
            self.remember(self.alice, text, tags=["capsule:core", "capsule-slot:identity", "status:canonical"])
        # Bob's personal layer never shows in Alice's week.
        self.remember(self.bob, "Bob's private note about the Lisbon offsite budget.")

        summary = summarise(self.alice, self.week)
        new_texts = [item["text"] for item in summary["new"]["top"]]
        assert new_texts[0].startswith("The Lisbon offsite")  # importance first
        assert summary["new"]["count"] == 6  # the deprecated "Thursdays" is not counted
        assert not any("Bob" in text for text in new_texts)
        assert [item["id"] for item in summary["changed"]["top"]] == [str(old.pk)]
        assert str(flagged.pk) in [item["id"] for item in summary["duplicates_flagged"]["top"]]
        assert summary["supersessions"][0] == {"new": str(newer.pk), "old": str(shipped.pk),
                                               "text": "We ship on Fridays now."}  # fmt: skip
        assert summary["most_recalled"][0]["id"] == str(new.pk)
        assert summary["stale_volatile"]["top"][0]["id"] == str(stale.pk)
        assert summary["capsule_problems"] == [{"capsule": "core", "problem": "two entries for identity"}]
        assert first.pk  # stored, and counted above

    def test_contradictions_held_by_a_canonical_memory_are_counted(self) -> None:
        self.remember(self.alice, "The on-call rota changes on Mondays.", tags=["status:canonical"])
        # The model-free check holds the canonical memory at capture (no model configured).
        challenger = self.remember(self.alice, "The on-call rota changes on Tuesdays.", tags=["status:canonical"])
        assert challenger.status == "draft"
        assert summarise(self.alice, self.week)["contradictions_held"] == 1

    def test_the_job_writes_once_delivers_by_mail_and_slack_and_retries(self) -> None:
        slack = FakeSlackApi()
        secret_set(actor=SYSTEM, name="slack_bot_token", value="xoxb-test-" + "1" * 24)
        self.bob.slack_user_id = "U0BOB"
        self.bob.save(update_fields=["slack_user_id"])
        memory_preferences_save(actor=self.alice, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="email")  # fmt: skip
        memory_preferences_save(actor=self.bob, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="slack")  # fmt: skip
        team_memory_settings_save(actor=self.admin, default_workspace="", default_tags="", shared_insights=True)
        self.remember(self.alice, "Alice's own: the dentist is on Tuesday.")
        self.remember(self.bob, "Bob's own: renew the parking permit.")
        self.remember(self.admin, "Shared: the office wifi password rotates monthly.", workspace="company")

        with override_settings(BRAIN_SLACK_API_URL=slack.url):
            outcome = insights_run(self.later)
        assert outcome == {"written": 3, "delivered": 2}
        assert insights_run(self.later) == {"written": 0, "delivered": 0}  # once per layer and week
        assert MemoryInsight.objects.count() == 3
        [message] = mail.outbox
        assert message.to == ["alice@example.com"]
        assert "dentist" in message.body
        assert "office wifi" in message.body  # the shared layer's week comes along
        assert "parking permit" not in message.body
        [call] = slack.calls
        assert call["path"] == "/api/chat.postMessage"
        assert call["channel"] == "U0BOB"
        assert call["auth"].startswith("Bearer xoxb-test-")
        assert "parking permit" in call["text"]
        assert "dentist" not in call["text"]
        # The dashboard shows the member's insight and the shared one.
        self.client.force_login(self.alice.user)
        page = self.client.get("/memory/").content.decode()
        assert "Your week" in page
        assert "The shared layer's week" in page

    def test_a_failed_delivery_is_recorded_and_retried(self) -> None:
        memory_preferences_save(actor=self.alice, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="email")  # fmt: skip
        with override_settings(EMAIL_BACKEND="tests.memory.test_insights.BrokenMail"):
            assert insights_run(self.later) == {"written": 1, "delivered": 0}
        insight = MemoryInsight.objects.get(member=self.alice)
        assert insight.delivery_error.startswith("ConnectionRefusedError")
        assert insight.delivered_at is None
        assert insights_run(self.later) == {"written": 0, "delivered": 1}
        insight.refresh_from_db()
        assert insight.delivered_at is not None
        assert insight.delivery_error == ""
        assert len(mail.outbox) == 1

    def test_a_run_killed_between_writing_and_sending_is_delivered_by_the_next(self) -> None:
        memory_preferences_save(actor=self.alice, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="email")  # fmt: skip
        memory_preferences_save(actor=self.bob, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="dashboard")  # fmt: skip
        # The worker dies right after committing the insights, before any is sent.
        with mock.patch("memory.insights.deliver", side_effect=SystemExit), pytest.raises(SystemExit):
            insights_run(self.later)
        assert MemoryInsight.objects.filter(member=self.alice, delivered_at__isnull=True).exists()
        assert insights_run(self.later) == {"written": 1, "delivered": 1}  # bob written now; alice sent
        assert len(mail.outbox) == 1
        assert insights_run(self.later) == {"written": 0, "delivered": 0}  # sent once; bob never sent
        assert len(mail.outbox) == 1
        assert not MemoryInsight.objects.get(member=self.bob).delivers

    def test_an_insight_another_run_is_sending_is_not_sent_twice(self) -> None:
        memory_preferences_save(actor=self.alice, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="email")  # fmt: skip
        with mock.patch("memory.insights.deliver", return_value=False):
            insights_run(self.later)
        insight = MemoryInsight.objects.get(member=self.alice)
        # Another run holds the insight's lease (it is sending it right now).
        held = timezone.now() + dt.timedelta(minutes=5)
        MemoryInsight.objects.filter(pk=insight.pk).update(lease_token=uuid.uuid4(), lease_expires_at=held)
        assert insights_run(self.later) == {"written": 0, "delivered": 0}
        assert mail.outbox == []
        # That run died: once its lease runs out, the next run sends it, once.
        MemoryInsight.objects.filter(pk=insight.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
        assert insights_run(self.later) == {"written": 0, "delivered": 1}
        assert insights_run(self.later) == {"written": 0, "delivered": 0}
        assert len(mail.outbox) == 1
        insight.refresh_from_db()
        assert insight.lease_token is None

    def test_a_member_who_switched_to_the_dashboard_meanwhile_is_not_sent_it(self) -> None:
        memory_preferences_save(actor=self.alice, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="email")  # fmt: skip
        with override_settings(EMAIL_BACKEND="tests.memory.test_insights.BrokenMail"):
            insights_run(self.later)
        memory_preferences_save(actor=self.alice, default_workspace="", default_tags="",
                                weekly_insights=True, insights_delivery="dashboard")  # fmt: skip
        assert insights_run(self.later) == {"written": 0, "delivered": 0}
        assert mail.outbox == []
        assert not MemoryInsight.objects.get(member=self.alice).delivers

    def test_a_quiet_week_and_no_link_rows_from_other_layers(self) -> None:
        summary = summarise(self.alice, self.week)
        assert summary["new"]["count"] == 0
        shared = self.remember(self.admin, "Shared: standups are at 9:30.", workspace="company")
        other = self.remember(self.admin, "Shared: the kitchen is cleaned on Fridays.", workspace="company")
        MemoryLink.objects.create(from_memory=other, to_memory=shared, type=LinkType.SUPERSEDES,
                                  provenance=Provenance.SYSTEM)  # fmt: skip
        assert summarise(self.alice, self.week)["supersessions"] == []
        assert len(summarise(None, self.week)["supersessions"]) == 1


class BrokenMail:
    """An email backend whose server refuses the connection."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        return

    def send_messages(self, messages: Any) -> int:
        raise ConnectionRefusedError("mail server down")


class SharedInsightRaceTests(TransactionTestCase):
    def test_a_memory_unshared_while_the_shared_insight_is_written_is_not_quoted_to_everyone(self) -> None:
        """The un-share committed between the summary's read and the insight's commit: it found
        no insight to drop, and the insight then quoted a personal memory to every member."""
        from django.db import connection

        from memory import insights
        from memory.services import memory_remember, memory_share

        alice = member_create(actor=SYSTEM, username="alice")
        bob = member_create(actor=SYSTEM, username="bob")
        team_memory_settings_save(actor=SYSTEM, default_workspace="personal", default_tags=[], shared_insights=True)
        week = last_full_week()
        memory = memory_remember(actor=alice, content="Zephyr project budget is frozen pending the audit.",
                                 workspace="company", importance=5).memory  # fmt: skip
        during = week.start + dt.timedelta(days=1)
        Memory.objects.filter(pk=memory.pk).update(created_at=during, updated_at=during)
        real = insights.summarise
        moved: list[bool] = []

        def unshare() -> None:
            try:
                memory_share(actor=alice, memory_id=memory.pk, workspace="personal")
            finally:
                connection.close()

        def then_unshare(member: Any, of_week: Any) -> Any:
            summary = real(member, of_week)
            if not moved:  # the first read only: the un-share lands between read and commit
                moved.append(True)
                worker = threading.Thread(target=unshare)
                worker.start()
                worker.join(10)
            return summary

        with mock.patch.object(insights, "summarise", then_unshare):
            insights.insight_write(None, week)
        assert Memory.objects.get(pk=memory.pk).workspace == "personal"
        shown = [insight.text for insight in insights.latest_for(bob)]
        assert not any("Zephyr" in text for text in shown), shown
