"""Answers: grounded or refused, with a local fake OpenAI-compatible server for the model."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from django.test import TestCase
from django.utils import timezone

from answers.models import Question
from answers.services import Refused, Scored, extractive, extractive_choose, question_ask, question_run
from corpus import search as search_module
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish
from tests.fakes import FakeModel

PRICE_LIST = "topics/pricing/price-list.md"


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def answer(text: str, citations: list[str]) -> dict[str, Any]:
    return {"role": "assistant", "content": json.dumps({"answer": text, "citations": citations})}


class AnswerTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month. "
                     "Enterprise is quoted per contract.\n")  # fmt: skip
        publish(DISCOUNT_POLICY, title="Discount policy", sensitivity="restricted", category="pricing",
                body="# Discount policy\n\n## Approval\n\nDiscounts above twelve percent need the commercial "
                     "lead's approval.\n")  # fmt: skip

    def setUp(self) -> None:
        search_module.query_vector_cache.clear()

    def ask(self, member: Any, text: str) -> Question:
        question = question_ask(actor=member, text=text, enqueue=False)
        question_run(question.pk)
        question.refresh_from_db()
        return question

    def test_a_grounded_answer_ships_with_its_citations(self) -> None:
        model = FakeModel(lambda body, n: answer("The Team plan is 20 euros a seat a month.", [f"{PRICE_LIST}#plans"]))
        try:
            with model.settings():
                question = self.ask(self.bob, "How much does the Team plan cost?")
        finally:
            model.close()
        assert question.status == "answered"
        assert question.citations == [f"{PRICE_LIST}#plans"]
        assert question.mode == "model"
        assert PRICE_LIST in question.retrieved

    def test_citing_a_hidden_page_or_one_not_retrieved_is_refused(self) -> None:
        hidden = FakeModel(lambda body, n: answer("Above 12% needs approval.", [DISCOUNT_POLICY]))
        try:
            with hidden.settings():
                question = self.ask(self.bob, "Who approves big discounts?")
        finally:
            hidden.close()
        assert question.status == "refused"
        assert "did not retrieve or read" in question.refusal_reason
        assert question.answer == ""
        assert DISCOUNT_POLICY not in json.dumps(hidden.requests)  # bob's prompt never contained it

        invented = FakeModel(lambda body, n: answer("It is on the wiki.", ["topics/elsewhere/wiki.md"]))
        try:
            with invented.settings():
                question = self.ask(self.alice, "How much does the Team plan cost?")
        finally:
            invented.close()
        assert question.status == "refused"
        uncited = FakeModel(lambda body, n: answer("20 euros.", []))
        try:
            with uncited.settings():
                assert self.ask(self.alice, "How much does the Team plan cost?").refusal_reason.startswith(
                    "the answer cited no page"
                )
        finally:
            uncited.close()

    def test_the_model_investigates_with_the_askers_visibility(self) -> None:
        def script(body: dict[str, Any], n: int) -> dict[str, Any]:
            if n == 1:
                return tool_call("c1", "read_page", {"path": DISCOUNT_POLICY})
            tool_reply = body["messages"][-1]["content"]
            if tool_reply == "not found":
                return answer("", [])
            return answer("Discounts above twelve percent need the commercial lead.", [DISCOUNT_POLICY + "#approval"])

        for member, expected in ((self.bob, "refused"), (self.alice, "answered")):
            model = FakeModel(script)
            try:
                with model.settings():
                    question = self.ask(member, "Who approves discounts?")
            finally:
                model.close()
            assert question.status == expected, question.refusal_reason
            assert question.steps == [{"tool": "read_page", "arguments": {"path": DISCOUNT_POLICY}}]

    def test_the_step_budget_stops_a_looping_model(self) -> None:
        looping = FakeModel(lambda body, n: tool_call(f"c{n}", "search", {"query": "plan"}))
        try:
            with looping.settings(MAX_STEPS=3):
                question = self.ask(self.alice, "What plans are there?")
        finally:
            looping.close()
        assert question.status == "refused"
        assert "step budget (3)" in question.refusal_reason
        assert len(looping.requests) == 3

    def test_secrets_are_masked_before_they_reach_the_model(self) -> None:
        model = FakeModel(lambda body, n: answer("", []))
        try:
            with model.settings():
                question = question_ask(actor=self.alice, text="What does the Team plan cost?", enqueue=False)
                Question.objects.filter(pk=question.pk).update(text="What does key AKIAIOSFODNN7EXAMPLE unlock?")
                question_run(question.pk)
        finally:
            model.close()
        assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(model.requests)

    def test_extractive_answers_refuses_and_never_cites_a_hidden_page(self) -> None:
        found = extractive(self.bob, "How much does the Team plan cost per seat?")
        assert found.citations == [f"{PRICE_LIST}#plans"]
        assert "20 euros per seat" in found.answer
        with pytest.raises(Refused, match="nothing you can read"):
            extractive(self.bob, "Where is the annual company picnic this summer?")
        for member, should_cite in ((self.bob, False), (self.alice, True)):
            try:
                cited = extractive(member, "Which discounts need the commercial lead's approval?").citations
            except Refused:
                cited = []
            assert any(c.startswith(DISCOUNT_POLICY) for c in cited) is should_cite

    def test_extractive_reads_soft_wrapped_sentences_and_plural_forms(self) -> None:
        publish("topics/support/escalation.md", title="Escalation",
                body="# Escalation\n\n## Urgent tickets\n\nUrgent tickets are escalated to the on-call\nengineer "
                     "within fifteen minutes.\n")  # fmt: skip
        found = extractive(self.bob, "When is an urgent ticket escalated to the engineer?")
        quoted, notice = found.answer.split("\n\n")
        assert quoted == "Urgent tickets are escalated to the on-call engineer within fifteen minutes."
        assert found.citations == ["topics/support/escalation.md#urgent-tickets"]
        assert "extractive" in notice
        assert "LLM_BASE_URL" in notice  # which setting gives a written answer

    def test_citations_land_on_the_section_they_quote(self) -> None:
        """The anchor was the slug of the last heading alone: "Discounts > 12%" cited "#12", the
        beta team's "Notes" the alpha team's, a heading equal to the title the page's h1, and a
        table's first row a heading the page does not have."""
        from answers.services import Anchors

        path = "topics/pricing/limits.md"
        publish(path, title="Überblick", body=(
            "# Überblick\n\nIntro.\n\n## Discounts > 12%\n\nFinance signs.\n\n## Alpha team\n\n### Notes\n\nA.\n\n"
            "## Beta team\n\n### Notes\n\nB.\n\n## Überblick\n\nAgain.\n\n# Rota | Hours\n--- | ---\nMon | 9\n"
        ))  # fmt: skip
        anchors = Anchors()
        assert anchors.cite(path, "Überblick > Discounts > 12%") == f"{path}#discounts-12"
        assert anchors.cite(path, "Überblick > Alpha team > Notes") == f"{path}#notes"
        assert anchors.cite(path, "Überblick > Beta team > Notes") == f"{path}#notes-1"
        assert anchors.cite(path, "Überblick > Überblick") == f"{path}#uberblick-1"
        assert anchors.cite(path, "Überblick") == f"{path}#uberblick"  # the page's h1
        assert anchors.cite(path, "Rota | Hours") == path  # a table, not a heading: no anchor
        assert anchors.checked(f"{path}#notes-1") == f"{path}#notes-1"
        assert anchors.checked(f'{path}#no-such-heading"><b>x') == path  # a model's invention

    def test_a_quoted_sentence_keeps_its_signs(self) -> None:
        """Stripping "#*-" from both ends of each line turned "-18 degrees" into "18 degrees":
        an answer that said the opposite of its page."""
        from answers.services import _sentences

        assert _sentences("The freezer must always stay at\n-18 degrees Celsius or colder.") == [
            "The freezer must always stay at -18 degrees Celsius or colder."
        ]
        assert _sentences("- Backups run nightly at two.\n\n## Restores are tested monthly.") == [
            "Backups run nightly at two.",
            "Restores are tested monthly.",
        ]

    def test_two_pages_answering_about_equally_well_are_named_not_guessed_between(self) -> None:
        publish("topics/travel/hotels.md", title="Hotel nights",
                body="# Hotel nights\n\n## Nightly cap\n\nHotel stays are capped at 180 euros a night, booked "
                     "through the travel desk.\n")  # fmt: skip
        publish("topics/finance/expenses.md", title="Expenses",
                body="# Expenses\n\n## Hotels\n\nThe nightly hotel limit is 180 euros, and the travel desk makes "
                     "every booking.\n")  # fmt: skip
        # Their claims differ by about 0.01 here (the margin is 0.06).
        with pytest.raises(Refused, match="several pages answer this about equally well") as refused:
            extractive(self.bob, "What may a hotel night cost?")
        assert "topics/finance/expenses.md" in str(refused.value)
        assert "topics/travel/hotels.md" in str(refused.value)
        # Asked so that one page's sentence is clearly closer, the question is answered from it.
        found = extractive(self.bob, "What is the cap for a hotel night?")
        assert found.citations == ["topics/travel/hotels.md#nightly-cap"]
        # Through the worker, the asker's page links the pages to read.
        question = self.ask(self.bob, "What may a hotel night cost?")
        assert question.status == "refused"
        assert question.refusal_pages == ["topics/finance/expenses.md", "topics/travel/hotels.md"]
        self.client.force_login(self.bob.user)
        page = self.client.get(f"/ask/{question.pk}").content.decode()
        assert 'href="/pages/topics/finance/expenses.md"' in page
        assert 'href="/pages/topics/travel/hotels.md"' in page
        # Agents get them as data too (REST and MCP share the tool's output).
        from django.test import Client

        from memory.tokens import api_token_issue

        rest = Client(HTTP_AUTHORIZATION=f"Bearer {api_token_issue(actor=self.bob, name='q')[1]}")
        body = rest.get(f"/api/v1/questions/{question.pk}", {"wait_seconds": "0"}).json()
        assert body["refusal_pages"] == ["topics/finance/expenses.md", "topics/travel/hotels.md"]

    def test_a_sentence_is_read_bare_and_behind_its_page_title(self) -> None:
        from answers.services import scored_sentences
        from brain import embeddings

        publish("topics/travel/hotels.md", title="Hotel nights",
                body="# Hotel nights\n\n## Nightly cap\n\nThe cap is 180 euros, booked through the travel "
                     "desk.\n")  # fmt: skip
        question = "What is the cap for a hotel night?"
        _, scored = scored_sentences(self.bob, question)
        mine = next(item for item in scored if item.sentence.startswith("The cap is 180 euros"))
        asked, bare, titled = embeddings.embed(
            [question, mine.sentence, f"Hotel nights: {mine.sentence}"]
        )  # fmt: skip
        assert mine.similarity == pytest.approx((float(asked @ bare) + float(asked @ titled)) / 2, abs=1e-5)
        # The title carries what the sentence leaves out ("hotel night"): reading it helps.
        assert float(asked @ titled) > float(asked @ bare)

    def test_a_quoted_sentence_reads_as_the_page_shows_it_not_as_markdown(self) -> None:
        """ "Find the [holiday calendar](calendar.md) on the intranet." was quoted as Markdown source."""
        publish("topics/people/holidays.md", title="Holidays", body=(
            "# Holidays\n\n## Calendar\n\nThe office closes for **twelve public holidays** a year; see the "
            "[holiday calendar](calendar.md) for the dates.\n"
        ))  # fmt: skip
        found = extractive(self.bob, "How many public holidays does the office close for?")
        quoted = found.answer.split("\n\n")[0]
        assert "twelve public holidays" in quoted
        assert "](" not in quoted, quoted
        assert "**" not in quoted, quoted
        assert "see the holiday calendar for the dates" in quoted

    def test_questions_are_validated_and_refused_questions_say_why(self) -> None:
        from django.core.exceptions import ValidationError

        with pytest.raises(ValidationError, match="ask a question"):
            question_ask(actor=self.alice, text="   ", enqueue=False)
        question = self.ask(self.bob, "Where is the annual company picnic this summer?")
        assert question.status == "refused"
        assert question.refusal_pages == []
        assert question.mode == "extractive"
        assert question.refusal_reason == "nothing you can read answers this question"


class SweepTests(BrainTestCase):
    def test_a_question_left_running_by_a_dead_worker_is_re_enqueued(self) -> None:
        import datetime as dt
        from unittest import mock

        from django.utils import timezone

        from answers import tasks
        from answers.services import questions_sweep

        question = question_ask(actor=self.alice, text="What plans are there?", enqueue=False)
        Question.objects.filter(pk=question.pk).update(
            status="running", lease_expires_at=timezone.now() - dt.timedelta(seconds=1)
        )
        with mock.patch.object(tasks.question_run_task, "delay") as delay:
            assert questions_sweep() == 1
        delay.assert_called_once_with(question.pk)
        assert question_run(question.pk) in ("answered", "refused")


class QuestionCredentialTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month.\n")  # fmt: skip

    def call(self, token: str, name: str | None = None, **arguments: Any) -> Any:
        body = ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
                if name else {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # fmt: skip
        return self.client.post("/api/mcp", data=json.dumps(body), content_type="application/json",
                                HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip

    def test_a_question_credential_sees_exactly_ask_and_await_and_answers_under_its_owner(self) -> None:
        import io

        from django.core.management import call_command

        from grants.principals import SYSTEM
        from grants.services import grant_issue, service_account_create

        service = service_account_create(actor=SYSTEM, name="support-bot")
        grant_issue(actor=SYSTEM, service_account=service, path="topics/", permission="read")
        out = io.StringIO()
        call_command("question_credential", "issue", "--name", "bot", "--service", "support-bot", stdout=out)
        token = out.getvalue().strip().splitlines()[-1]
        assert token.startswith("bqc_")
        names = {tool["name"] for tool in self.call(token).json()["result"]["tools"]}
        assert names == {"ask", "await_answer"}
        filed = self.call(token, "ask", question="How much does the Team plan cost per seat?").json()["result"]
        question_id = filed["structuredContent"]["question_id"]
        pending = self.call(token, "await_answer", question_id=question_id, wait_seconds=0).json()["result"]
        assert pending["structuredContent"]["status"] == "queued"
        question_run(question_id)  # the worker's part
        done = self.call(token, "await_answer", question_id=question_id).json()["result"]
        assert done["structuredContent"]["status"] == "answered"
        assert done["structuredContent"]["citations"] == [f"{PRICE_LIST}#plans"]
        assert "Sources:" in done["content"][0]["text"]
        assert Question.objects.get(pk=question_id).service_asker_id == service.pk

        other = io.StringIO()
        call_command("question_credential", "issue", "--name", "b", "--member", "bob", stdout=other)
        bob_token = other.getvalue().strip().splitlines()[-1]
        theirs = self.call(bob_token, "await_answer", question_id=question_id).json()["result"]
        assert theirs["isError"] is True
        assert theirs["content"][0]["text"] == "Not found."
        hidden = self.call(bob_token, "read_page", path=PRICE_LIST).json()
        assert hidden["error"]["message"] == "Unknown tool: read_page"
        from answers.models import QuestionCredential

        call_command(
            "question_credential", "revoke", str(QuestionCredential.objects.get(name="bot").pk), stdout=io.StringIO()
        )
        assert self.call(token).status_code == 401


class AskPageTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month.\n")  # fmt: skip

    def test_ask_watch_and_read_the_answer_with_clickable_citations(self) -> None:
        self.client.force_login(self.bob.user)
        with self.captureOnCommitCallbacks(execute=False):
            filed = self.client.post("/ask", {"text": "How much does the Team plan cost per seat?"})
        question = Question.objects.get()
        assert filed["Location"] == f"/ask/{question.pk}"
        waiting = self.client.get(f"/ask/{question.pk}", HTTP_HX_REQUEST="true").content.decode()
        assert 'hx-trigger="every 1s"' in waiting
        # A question still waiting is asked after less often: 2 s past 10 s, 5 s past a minute.
        for waited, every in ((30, "2s"), (600, "5s")):
            Question.objects.filter(pk=question.pk).update(created_at=timezone.now() - dt.timedelta(seconds=waited))
            later = self.client.get(f"/ask/{question.pk}", HTTP_HX_REQUEST="true").content.decode()
            assert f'hx-trigger="every {every}"' in later, waited
        question_run(question.pk)  # the worker's part
        page = self.client.get(f"/ask/{question.pk}").content.decode()
        assert "20 euros per seat" in page
        assert f'href="/pages/{PRICE_LIST}#plans"' in page
        self.client.force_login(self.alice.user)
        assert self.client.get(f"/ask/{question.pk}").status_code == 404
        assert self.client.post("/ask", {"text": "  "}).status_code == 400


class QuestionFailureTests(BrainTestCase):
    def test_an_unexpected_error_ends_the_question_as_failed_not_running_for_ever(self) -> None:
        from unittest import mock

        from answers.services import question_ask, question_run

        question = question_ask(actor=self.alice, text="Who approves discounts?", enqueue=False)
        with mock.patch("answers.services.extractive", side_effect=RuntimeError("a bug")), \
                self.assertLogs("answers.services", "ERROR"):  # fmt: skip
            assert question_run(question.pk) == "failed"
        question.refresh_from_db()
        assert question.status == "failed"
        assert "internal error" in question.refusal_reason
        assert "a bug" not in question.refusal_reason


class OtherScriptsTests(BrainTestCase):
    def test_a_question_without_latin_letters_has_words_to_look_for(self) -> None:
        """Questions in Japanese or Russian were refused before any reading: "no words to look for"."""
        from answers.services import _words, question_ask, question_run

        assert {"東京", "営業", "時間"} <= _words("東京オフィスの営業時間は？")
        assert {"когда", "офис"} <= _words("Когда открыт московский офис?")
        assert _words("Who approves a discount above 12%?") == {"approv", "discount", "abov"}  # as before
        publish(
            "topics/tokyo.md",
            title="東京オフィス",
            body="# 東京オフィス\n\n東京オフィスの営業時間は平日の9時から18時までです。\n",
        )
        question = question_ask(actor=self.bob, text="東京オフィスの営業時間は？", enqueue=False)
        question_run(question.pk)
        question.refresh_from_db()
        assert "no words" not in question.refusal_reason


class AskFormTests(BrainTestCase):
    def test_a_refused_question_keeps_what_was_typed_unless_it_held_a_secret(self) -> None:
        self.client.force_login(self.alice.user)
        long_question = "Who approves discounts? " + "x" * 1000  # search takes 1,000: never answerable
        response = self.client.post("/ask", {"text": long_question})
        assert response.status_code == 400
        assert "at most 1000 characters" in response.content.decode()
        assert "x" * 1000 in response.content.decode()
        key = "AKIA" + "QYLPMN5HHHFPZAM2"
        response = self.client.post("/ask", {"text": f"Is {key} still valid?"})
        assert response.status_code == 400
        assert key[4:] not in response.content.decode()


def _scored(page: str, score: float, *, order: int = 0, similarity: float | None = 0.6) -> Scored:
    return Scored(score, order, f"A sentence of {page} scoring {score}.", f"{page}#section", similarity)


def test_the_cited_page_must_lead_the_next_by_the_claim_margin() -> None:
    lead = extractive_choose([_scored("a.md", 0.70), _scored("b.md", 0.60, order=1)], floor=0.45)
    assert [s.citation for s in lead.sentences] == ["a.md#section"]
    assert lead.contenders == []
    tie = extractive_choose([_scored("a.md", 0.70), _scored("b.md", 0.67, order=1)], floor=0.45)
    assert tie.sentences == []
    assert tie.contenders == ["a.md", "b.md"]
    # The margin is the bench's knob: none at all answers the tie.
    assert extractive_choose([_scored("a.md", 0.70), _scored("b.md", 0.67)], floor=0.45, margin=0.0).sentences


def test_a_clearly_close_sentence_answers_even_when_another_page_is_near() -> None:
    clear = extractive_choose([_scored("a.md", 0.85), _scored("b.md", 0.84, order=1)], floor=0.45)
    assert [s.citation for s in clear.sentences] == ["a.md#section"]


def test_without_the_embedder_the_margin_does_not_apply() -> None:
    # The margin was measured on similarities; word coverage alone ties too often to refuse on it.
    chosen = extractive_choose(
        [_scored("a.md", 0.75, similarity=None), _scored("b.md", 0.75, order=1, similarity=None)], floor=0.45
    )
    assert [s.citation for s in chosen.sentences] == ["a.md#section"]


class AnswersReadNowTests(BrainTestCase):
    def test_an_answer_resting_on_a_page_the_asker_lost_is_withdrawn_everywhere(self) -> None:
        from answers.services import WITHDRAWN, question_await

        publish("topics/ops/payroll.md", title="Payroll", body="# Payroll\n\n## Schedule\n\nRuns on the 25th.\n")
        question = Question.objects.create(
            asker=self.bob, text="When does payroll run?", status=Question.Status.ANSWERED, mode="extractive",
            answer="Runs on the 25th.", citations=["topics/ops/payroll.md#schedule"],
        )  # fmt: skip
        self.client.force_login(self.bob.user)
        assert "Runs on the 25th" in self.client.get(f"/ask/{question.pk}").content.decode()
        assert question_await(actor=self.bob, question_id=question.pk, wait_seconds=0).answer == "Runs on the 25th."
        # The page becomes restricted: bob no longer reads it, so he no longer reads what it said.
        publish("topics/ops/payroll.md", title="Payroll", sensitivity="restricted",
                body="# Payroll\n\n## Schedule\n\nRuns on the 25th.\n")  # fmt: skip
        page = self.client.get(f"/ask/{question.pk}").content.decode()
        assert "Runs on the 25th" not in page
        assert "no longer read" in page
        seen = question_await(actor=self.bob, question_id=question.pk, wait_seconds=0)
        assert (seen.answer, seen.citations) == (WITHDRAWN, [])
        assert Question.objects.get(pk=question.pk).answer == "Runs on the 25th."  # nothing rewritten


class DemoQuestionTests(TestCase):
    """The first seed's demo question, against the demo corpus as ``make run`` loads it — no
    page of a test's own in its place (``demo_seed`` keeps a page that already exists, so a
    fixture's discount policy answered instead of the demo's)."""

    def test_the_seed_demo_question_is_answered_from_the_demo_corpus(self) -> None:
        from django.core.management import call_command

        from grants.models import Member

        call_command("demo_seed", stdout=open("/dev/null", "w"))  # noqa: SIM115
        from corpus.models import Page

        live = Page.objects.get(path="topics/pricing/discount-policy.md").current_revision
        assert live is not None
        assert "commercial lead named on the" in live.body  # the demo's own page
        alice = Member.objects.get(user__username="alice")  # the one who may read the restricted policy
        found = extractive(alice, "Who approves a discount above 12%?")
        assert found.citations[0].startswith("topics/pricing/discount-policy.md")
        quoted = " ".join(found.answer.split("\n\n")[0].split())
        # Who approves: the commercial lead, above 12% (account managers only up to it).
        assert "Anything above 12% goes to the commercial lead named on the account page." in quoted, quoted
