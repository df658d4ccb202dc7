"""Slack slash commands and the encrypted integration secrets behind them."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest import mock
from urllib.parse import urlencode

import pytest
from django.test import override_settings
from django.utils import timezone

from answers.models import Question
from answers.services import question_ask
from corpus import search as search_module
from grants.models import AuditEvent, Member
from grants.principals import SYSTEM
from integrations import tasks
from integrations.models import IntegrationSecret, SlackDelivery, SlackLink
from integrations.secrets import SecretUnavailable, secret_get, secret_set, secrets_rotate
from integrations.slack import slack_answer, slack_deliveries_sweep, slack_delivery_claim
from tests.base import BrainTestCase, publish

KEY_1 = "1:" + base64.b64encode(b"k" * 32).decode()
KEY_2 = "2:" + base64.b64encode(b"m" * 32).decode()
SIGNING = "8f742231b10e8888abcd99yyyzzz85a5"
PRICE_LIST = "topics/pricing/price-list.md"


class FakeSlack:
    """A local stand-in for Slack's response_url endpoint: records what Brain posts."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                owner.posts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/response"


@override_settings(BRAIN_SECRETS_KEYS=KEY_1, BRAIN_BASE_URL="https://brain.example.org")
class SlackTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month.\n")  # fmt: skip

    def setUp(self) -> None:
        search_module.query_vector_cache.clear()
        secret_set(actor=SYSTEM, name="slack_signing_secret", value=SIGNING)
        Member.objects.filter(pk=self.bob.pk).update(slack_user_id="U0BOB")

    def post(
        self,
        text: str,
        user: str = "U0BOB",
        age: int = 0,
        secret: str = SIGNING,
        response_url: str = "",
        content_type: str = "application/x-www-form-urlencoded",
        **fields: str,
    ) -> Any:
        body = urlencode(
            {
                "command": "/brain",
                "text": text,
                "user_id": user,
                "response_url": response_url or "https://hooks.slack.com/commands/T0/1/x",
                **fields,
            }
        )
        stamp = str(int(time.time()) - age)
        signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
        return self.client.post(
            "/integrations/slack/commands", data=body, content_type=content_type,
            HTTP_X_SLACK_REQUEST_TIMESTAMP=stamp, HTTP_X_SLACK_SIGNATURE=signature,
        )  # fmt: skip

    def test_a_bad_signature_is_401_and_nothing_is_queued(self) -> None:
        with mock.patch.object(tasks.slack_answer_task, "delay") as delay, self.captureOnCommitCallbacks(execute=True):
            forged = self.post("How much is the Team plan?", secret="not-the-secret")
            stale = self.post("How much is the Team plan?", age=6 * 60)
        assert forged.status_code == 401
        assert stale.status_code == 401
        delay.assert_not_called()
        assert Question.objects.count() == 0

    def test_an_unsigned_request_or_a_non_numeric_timestamp_is_401_not_500(self) -> None:
        self.client.raise_request_exception = False
        body = urlencode({"command": "/brain", "text": "help", "user_id": "U0BOB"})
        cases: list[dict[str, Any]] = [
            {},
            {"HTTP_X_SLACK_REQUEST_TIMESTAMP": "soon", "HTTP_X_SLACK_SIGNATURE": "v0=00"},
            {"HTTP_X_SLACK_REQUEST_TIMESTAMP": "١٢٣", "HTTP_X_SLACK_SIGNATURE": "v0=00"},  # non-ASCII digits
            {"HTTP_X_SLACK_REQUEST_TIMESTAMP": "1" * 5000, "HTTP_X_SLACK_SIGNATURE": "v0=00"},  # past int()'s digits
            {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(int(time.time()))},
            # hmac.compare_digest raises on non-ASCII text: a 500 before any check.
            {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(int(time.time())), "HTTP_X_SLACK_SIGNATURE": "v0=é"},
            {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(int(time.time())), "HTTP_X_SLACK_SIGNATURE": "v0=" + "a" * 63 + "ÿ"},
        ]
        for headers in cases:
            with self.subTest(headers=headers):
                response = self.client.post(
                    "/integrations/slack/commands", data=body, content_type="application/x-www-form-urlencoded",
                    **headers,
                )  # fmt: skip
                assert response.status_code == 401, response.content

    def test_page_text_is_shown_literally_never_as_slack_links_or_mentions(self) -> None:
        """A page titled ``<!channel> <https://evil.example/login|Re-link>`` was posted as written:
        a channel-wide mention and a disguised link under Brain's name."""
        publish("topics/zebra-plan.md", title="<!channel> <https://evil.example/login|Re-link your Slack> & more",
                body="# Zebra plan\n\n## Plan\n\nThe zebra plan ships in May.\n")  # fmt: skip
        text = self.post("search zebra plan").json()["text"]
        assert "&lt;!channel&gt; &lt;https://evil.example/login|Re-link your Slack&gt; &amp; more" in text
        assert "<!channel>" not in text
        assert "<https://evil.example" not in text

    def test_a_good_request_is_acknowledged_then_answered_at_the_response_url(self) -> None:
        slack = FakeSlack()
        try:
            with (
                mock.patch.object(tasks.slack_answer_task, "delay") as delay,
                self.captureOnCommitCallbacks(execute=True),
            ):
                started = time.monotonic()
                with override_settings(BRAIN_SLACK_RESPONSE_URL_PREFIX=slack.url):
                    ack = self.post("How much does the Team plan cost per seat?", response_url=slack.url)
                assert time.monotonic() - started < 3
            assert ack.json() == {"response_type": "ephemeral", "text": "Looking into it… the answer will appear here."}
            delivery = SlackDelivery.objects.get()
            delay.assert_called_once_with(delivery.pk)  # the task carries the id, not the URL
            assert slack_answer(delivery.pk) == "delivered"
        finally:
            slack.server.shutdown()
        assert slack.posts[0]["response_type"] == "ephemeral"
        assert "20 euros per seat" in slack.posts[0]["text"]
        assert "https://brain.example.org/pages/topics/pricing/price-list.md" in slack.posts[0]["text"]
        assert Question.objects.get().asker_id == self.bob.pk

    def test_a_signed_request_with_odd_fields_is_refused_by_name_never_a_500(self) -> None:
        """Only Slack or a holder of the signing secret can send these, but a 500 (a value too
        long for its column, a NUL) and an answer posted wherever response_url says are ours."""
        with mock.patch.object(tasks.slack_answer_task, "delay") as delay, self.captureOnCommitCallbacks(execute=True):
            for user in ("U" * 40, "", "u0bob", "U0BOB\n"):
                refused = self.post("link", user=user)
                assert refused.status_code == 400, user
                assert "user_id" in refused.json()["error"]["message"]
            assert self.post("link", user="U0\x00X").status_code == 400  # the form's NUL, refused before the view
            # The view reads the body as a form whatever its type: the middleware's form check does not run.
            plain = self.post("link", user="U0\x00X", content_type="text/plain")
            assert plain.status_code == 400
            assert "user_id" in plain.json()["error"]["message"]
            asked = self.post("Team plan?", response_url="https://hooks.slack.com/\x00", content_type="text/plain")
            assert asked.status_code == 400
            assert "response_url" in asked.json()["error"]["message"]
            for url in (
                "http://169.254.169.254/latest/meta-data", "not a url", "https://hooks.slack.com.evil.example/x",
                "https://hooks.slack.com@evil.example/x", "https://evil.example/?https://hooks.slack.com/",
                "http://hooks.slack.com/commands/x", "https://hooks.slack.com:99999/x",
                "https://hooks.slack.com/" + "x" * 1000,
            ):  # fmt: skip
                refused = self.post("How much does the Team plan cost?", response_url=url)
                assert refused.status_code == 400, url
                assert "response_url" in refused.json()["error"]["message"]
            # A NUL in a name Slack sends is not stored; the rest of the name is.
            linked = self.post(
                "link", user="U0NEW", user_name="ca\x00rol\x1b[31m", team_domain="acme\x00", content_type="text/plain"
            )
            assert linked.status_code == 200
        assert not SlackDelivery.objects.exists()
        delay.assert_not_called()
        row = SlackLink.objects.get(slack_user_id="U0NEW")
        assert (row.slack_user_name, row.slack_team) == ("ca rol [31m", "acme")

    def test_an_unlinked_user_gets_instructions_and_can_link(self) -> None:
        answer = self.post("How much is the Team plan?", user="U0NOBODY")
        assert "not linked" in answer.json()["text"]
        assert Question.objects.count() == 0
        link = self.post("link", user="U0ALICE").json()["text"]
        url = link.split("link while signed in to Brain, within 10 minutes: ")[1]
        path = url.removeprefix("https://brain.example.org")
        self.client.force_login(self.alice.user)
        assert "U0ALICE" in self.client.get(path).content.decode()
        self.client.post(path)
        assert Member.objects.get(pk=self.alice.pk).slack_user_id == "U0ALICE"
        assert self.client.get(path).status_code == 404  # one time only
        # A link sent by someone else: the page says whose account it is and what it replaces.
        sent = self.post("link", user="U0MALLORY", user_name="mallory <b>", team_domain="acme").json()["text"]
        opened = self.client.get(sent.split("within 10 minutes: ")[1].removeprefix("https://brain.example.org"))
        page = opened.content.decode()
        # Whose account, in words a person recognises (escaped as any text).
        named = (
            "<code>U0MALLORY</code>, whose Slack name is <strong>@mallory &lt;b&gt;</strong>, "
            "of the workspace <strong>acme</strong>"
        )
        assert named in page
        assert "Link only if you typed" in page
        assert "replaces your current link to Slack user <code>U0ALICE</code>" in page
        assert "search" in self.post("help").json()["text"]
        found = self.post("search team plan").json()["text"]
        assert "Price list" in found

    def test_a_bare_search_a_nul_and_a_suspended_link_are_each_told_what_to_do(self) -> None:
        with mock.patch.object(tasks.slack_answer_task, "delay") as delay, self.captureOnCommitCallbacks(execute=True):
            # "search" alone was asked as the question "search" (a question, charged as one).
            assert "Say what to search for" in self.post("search").json()["text"]
            # A NUL in the terms (any body is read as a form here) was a database error; a
            # control character in a form (Word's line break, an escape) was an HTML error page
            # Slack showed as a failed command. Each reads as a space.
            for content_type in ("text/plain", "application/x-www-form-urlencoded"):
                pasted = self.post("search team\x00plan\x0bprice\x1b", content_type=content_type)
                assert pasted.status_code == 200, (content_type, pasted.status_code)
                assert pasted["Content-Type"] == "application/json"
                assert "Price list" in pasted.json()["text"], pasted.json()
            # Linked to a suspended account: "not linked, type /brain link", and linking then failed.
            Member.objects.filter(pk=self.bob.pk).update(is_active=False)
            told = self.post("How much is the Team plan?").json()["text"]
            assert "linked to a Brain account that is suspended" in told
        assert Question.objects.count() == 0
        delay.assert_not_called()

    def test_questions_searches_and_links_count_in_the_callers_window(self) -> None:
        from grants.services import member_create
        from tests.base import start_of_fresh_rate_window

        dora = member_create(actor=SYSTEM, username="dora")
        Member.objects.filter(pk=dora.pk).update(slack_user_id="U0DORA")
        slack_user = f"U0NEW{dora.pk}"  # a Slack user no earlier run counted
        start_of_fresh_rate_window(margin=20)
        with override_settings(BRAIN_MCP_RATE_LIMITS={"read": 1000, "search": 1, "ask": 1, "write": 1}):
            with mock.patch.object(tasks.slack_answer_task, "delay"), self.captureOnCommitCallbacks(execute=True):
                assert "Looking into it" in self.post("How much is the Team plan?", user="U0DORA").json()["text"]
                again = self.post("And the Business plan?", user="U0DORA").json()["text"]
            assert again.startswith("Too many requests from you: try again in ")
            assert Question.objects.filter(asker=dora).count() == 1
            assert "No pages you can read" in self.post("search team plan", user="U0DORA").json()["text"]
            assert "Too many requests" in self.post("search team plan", user="U0DORA").json()["text"]
            assert "link while signed in" in self.post("link", user=slack_user).json()["text"]
            assert "Too many requests" in self.post("link", user=slack_user).json()["text"]
            assert SlackLink.objects.filter(slack_user_id=slack_user).count() == 1
            assert "help" in self.post("help", user="U0DORA").json()["text"]  # help costs nothing

    def test_secrets_are_encrypted_never_readable_and_never_logged_or_audited(self) -> None:
        row = IntegrationSecret.objects.get(name="slack_signing_secret")
        assert SIGNING.encode() not in bytes(row.ciphertext)
        assert row.key_version == 1
        with self.assertLogs(level="DEBUG") as logs:
            logging.getLogger("tests").info("capturing")  # assertLogs needs one record; Brain logs no value
            secret_set(actor=SYSTEM, name="slack_signing_secret", value=SIGNING)
            self.post("help")
        assert SIGNING not in "\n".join(logs.output)
        assert SIGNING not in json.dumps(list(AuditEvent.objects.values("action", "target", "metadata")))
        assert AuditEvent.objects.filter(action="integration_secret.set", target="slack_signing_secret").exists()
        # A ciphertext moved onto another name does not decrypt (the name is bound in).
        IntegrationSecret.objects.create(name="other", ciphertext=row.ciphertext, nonce=row.nonce, key_version=1)
        with pytest.raises(SecretUnavailable):
            secret_get("other")
        IntegrationSecret.objects.filter(name="other").delete()
        with override_settings(BRAIN_SECRETS_KEYS=f"{KEY_1},{KEY_2}"):
            assert secrets_rotate() == 1
            assert IntegrationSecret.objects.get(name="slack_signing_secret").key_version == 2
            assert secret_get("slack_signing_secret") == SIGNING


@override_settings(BRAIN_SECRETS_KEYS=KEY_1)
class SecretAdminTests(BrainTestCase):
    def test_an_admin_sets_a_secret_in_the_admin_and_never_sees_it(self) -> None:
        self.charlie.user.is_staff = True
        self.charlie.user.save()
        self.client.force_login(self.charlie.user)
        added = self.client.post(
            "/admin/integrations/integrationsecret/add/", {"name": "slack_signing_secret", "value": SIGNING}
        )
        assert added.status_code == 302
        assert secret_get("slack_signing_secret") == SIGNING
        row = IntegrationSecret.objects.get()
        page = self.client.get(f"/admin/integrations/integrationsecret/{row.pk}/change/").content.decode()
        assert SIGNING not in page
        assert SIGNING not in self.client.get("/admin/integrations/integrationsecret/").content.decode()
        # Replaced on its change page, never renamed into a second row.
        changed = self.client.post(
            f"/admin/integrations/integrationsecret/{row.pk}/change/", {"name": "other_name", "value": "new value"}
        )
        assert changed.status_code == 302
        assert list(IntegrationSecret.objects.values_list("name", flat=True)) == ["slack_signing_secret"]
        assert secret_get("slack_signing_secret") == "new value"

    def test_a_key_as_the_name_is_refused_and_not_shown_again(self) -> None:
        """The value is encrypted; the name is stored, listed and audited in clear."""
        self.client.force_login(self.charlie.user)
        key = "AKIA" + "Q3ZXVB7TR2LMN4PK"
        answer = self.client.post("/admin/integrations/integrationsecret/add/", {"name": key, "value": "x"})
        assert answer.status_code == 200
        assert "looks like a secret itself" in answer.content.decode()
        assert key not in answer.content.decode()
        assert not IntegrationSecret.objects.exists()

    def test_a_key_version_that_cannot_be_stored_is_a_form_error_not_a_500(self) -> None:
        self.client.force_login(self.charlie.user)
        key = KEY_1.partition(":")[2]
        for keys in (f"-1:{key}", f"0:{key}", f"99999:{key}"):
            with self.subTest(keys=keys[:6]), override_settings(BRAIN_SECRETS_KEYS=keys):
                answer = self.client.post(
                    "/admin/integrations/integrationsecret/add/", {"name": "slack_bot_token", "value": "xoxb-1"}
                )
                assert answer.status_code == 200
                assert "a key version is a whole number" in answer.content.decode()
        assert not IntegrationSecret.objects.exists()


class SlackDeliveryRetryTests(BrainTestCase):
    def delivery(self, asked_minutes_ago: int) -> SlackDelivery:
        question = question_ask(actor=self.bob, text="How much is the Team plan?", enqueue=False)
        Question.objects.filter(pk=question.pk).update(
            created_at=timezone.now() - dt.timedelta(minutes=asked_minutes_ago)
        )
        return SlackDelivery.objects.create(question=question, response_url="https://hooks.slack.invalid/x")

    def test_a_pending_or_undelivered_answer_is_tried_again_under_the_same_lease(self) -> None:
        delivery = self.delivery(asked_minutes_ago=0)
        tokens: list[Any] = []
        outcomes = iter(["pending", "undelivered", "delivered"])

        def answer(delivery_id: int, lease: Any) -> str:
            tokens.append(lease.token)
            # While the chain waits out a retry, a second send of the same delivery finds it held.
            assert slack_delivery_claim(delivery_id) is None
            return next(outcomes)

        with mock.patch("integrations.slack.slack_answer", side_effect=answer) as run:
            tasks.slack_answer_task.apply(args=(delivery.pk,))
        assert run.call_count == 3
        assert len(set(tokens)) == 1  # each retry resumed the lease its first attempt took

    def test_two_sends_of_one_delivery_post_its_answer_once(self) -> None:
        slack = FakeSlack()
        try:
            delivery = self.delivery(asked_minutes_ago=0)
            SlackDelivery.objects.filter(pk=delivery.pk).update(response_url=slack.url)
            first = slack_delivery_claim(delivery.pk)
            assert first is not None
            # A second task (the sweep, a redelivered message) while the first chain holds it.
            tasks.slack_answer_task.apply(args=(delivery.pk,))
            assert slack.posts == []
            assert slack_answer(delivery.pk, first) == "delivered"
            # And once delivered, any later send is skipped.
            tasks.slack_answer_task.apply(args=(delivery.pk,))
            assert slack_answer(delivery.pk) == "skipped"
        finally:
            slack.server.shutdown()
        assert len(slack.posts) == 1
        row = SlackDelivery.objects.get(pk=delivery.pk)
        assert row.delivered_at is not None
        assert row.lease_token is None

    def test_a_chain_whose_worker_died_is_taken_over_and_the_late_one_posts_nothing(self) -> None:
        slack = FakeSlack()
        try:
            delivery = self.delivery(asked_minutes_ago=0)
            SlackDelivery.objects.filter(pk=delivery.pk).update(response_url=slack.url)
            dead = slack_delivery_claim(delivery.pk)
            assert dead is not None
            expired = timezone.now() - dt.timedelta(seconds=1)
            SlackDelivery.objects.filter(pk=delivery.pk).update(lease_expires_at=expired)
            with (
                mock.patch.object(tasks.slack_answer_task, "delay") as delay,
                mock.patch("brain.jobs.queue_idle", return_value=False),
            ):
                assert slack_deliveries_sweep() == 1  # a dead chain is re-sent at once
            delay.assert_called_once_with(delivery.pk)
            tasks.slack_answer_task.apply(args=(delivery.pk,))
            # The first worker wakes up late: its retry's token is no longer the row's.
            tasks.slack_answer_task.apply(args=(delivery.pk, str(dead.token)))
        finally:
            slack.server.shutdown()
        assert len(slack.posts) == 1

    def test_the_sweep_leaves_a_live_chain_alone(self) -> None:
        delivery = self.delivery(asked_minutes_ago=5)
        assert slack_delivery_claim(delivery.pk) is not None
        with (
            mock.patch.object(tasks.slack_answer_task, "delay") as delay,
            mock.patch("brain.jobs.queue_idle", return_value=True),
        ):
            assert slack_deliveries_sweep() == 0
        delay.assert_not_called()

    def test_the_sweep_re_sends_lost_deliveries_while_slack_still_accepts_them(self) -> None:
        lost = self.delivery(asked_minutes_ago=5)
        self.delivery(asked_minutes_ago=45)  # past the response URL's 30 minutes
        SlackDelivery.objects.filter(pk=self.delivery(asked_minutes_ago=5).pk).update(delivered_at=timezone.now())
        with mock.patch.object(tasks.slack_answer_task, "delay") as delay:
            with mock.patch("brain.jobs.queue_idle", return_value=False):
                assert slack_deliveries_sweep() == 0
            with mock.patch("brain.jobs.queue_idle", return_value=True):
                assert slack_deliveries_sweep() == 1
        delay.assert_called_once_with(lost.pk)
