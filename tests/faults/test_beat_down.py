"""Beat down for an hour: nothing is lost, and each sweep catches up in one run.

While neither beat nor a worker ran, jobs of every kind piled up: some were queued and
their messages lost (the broker restarted, or the commit's send failed), some were
claimed by a worker that died at the start of the hour. Then beat comes back: each sweep
runs once, a worker drains what it sent, and every job completes exactly once.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tempfile
from typing import Any

from django.db.models import Model, QuerySet
from django.test import TransactionTestCase
from django.utils import timezone

from answers.models import Question
from answers.services import question_ask, questions_sweep
from brain.jobs import queue_idle
from builds.driver import import_job_create, jobs_sweep
from builds.models import Build, BuildChange, BuildJob
from corpus.models import Revision, SourceChunk
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from ingest.models import Extraction
from ingest.services import document_ingest, extractions_sweep
from memory.models import LinkType, Memory, MemoryLink, MemoryVerdictJob, Status
from memory.services import memory_remember
from memory.verdict_jobs import verdict_jobs_sweep
from tests.base import page_markdown, publish
from tests.faults.servers import HoldingServer, chat, llm_env, llm_settings
from tests.faults.test_killed_workers import CANTEEN, CANTEEN_LATER, NOTES, PRICE_LIST, STARTUP
from tests.faults.workers import MEDIA_ENV, kill, private_queue, purge, shared_media, start_worker, wait_for

MEETING = "The weekly team meeting is on Monday mornings."
MEETING_LATER = "The weekly team meeting happens on Thursday afternoons."
ANSWER = {"answer": "The Team plan is 20 euros a seat a month.", "citations": [f"{PRICE_LIST}#plans"]}


def model_reply(body: dict[str, Any], number: int) -> dict[str, Any]:
    """The one fake model: memory verdicts say "contradiction", questions get the price."""
    if "memory tidy" in body["messages"][0]["content"]:
        return {"role": "assistant", "content": '{"verdict": "contradiction"}'}
    return {"role": "assistant", "content": json.dumps(ANSWER)}


def finished(rows: QuerySet[Any], state_field: str, *states: str) -> bool:
    return not rows.exclude(**{f"{state_field}__in": states}).exists()


class BeatDownTests(TransactionTestCase):
    def setUp(self) -> None:
        self.queue = self.enterContext(private_queue())
        self.alice = member_create(actor=SYSTEM, username="alice")
        for path, permission in (("captures/", "suggest"), ("topics/", "read"), ("imports/", "suggest")):
            grant_issue(actor=SYSTEM, member=self.alice, path=path, permission=permission)
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month.\n")  # fmt: skip
        self.model = HoldingServer(chat(model_reply))
        self.addCleanup(self.model.close)
        self.media = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.media, True)

    def test_every_job_of_the_hour_completes_once_after_one_sweep_each(self) -> None:
        an_hour_ago = timezone.now() - dt.timedelta(hours=1)
        died = {"lease_expires_at": an_hour_ago + dt.timedelta(minutes=5), "attempts": 1}
        with shared_media(self.media), llm_settings(self.model):
            # The hour's work, each kind twice: one never sent, one whose worker died.
            extractions = [
                document_ingest(actor=self.alice, filename=f"notes-{n}.md", data=f"{NOTES}\n{n}\n".encode())
                for n in range(2)
            ]
            Extraction.objects.filter(pk=extractions[1].pk).update(status="running", **died)
            questions = [
                question_ask(actor=self.alice, text=f"How much does the Team plan cost? ({n})") for n in range(2)
            ]
            Question.objects.filter(pk=questions[1].pk).update(status="running", **died)
            pairs = []
            for old_text, new_text in ((CANTEEN, CANTEEN_LATER), (MEETING, MEETING_LATER)):
                old = memory_remember(actor=self.alice, content=old_text).memory
                new = memory_remember(actor=self.alice, content=new_text).memory
                pairs.append((old, new))
            verdicts = MemoryVerdictJob.objects.order_by("pk")
            assert verdicts.count() == 2
            MemoryVerdictJob.objects.filter(pk=verdicts[1].pk).update(
                state="running", lease_expires_at=an_hour_ago + dt.timedelta(minutes=10), attempts=1
            )
            files = [(f"imports/hour/page-{n}.md", page_markdown(title=f"Page {n}")) for n in range(3)]
            build = import_job_create(requester=self.alice, files=files, title="An import in the quiet hour")

            purge(self.queue)  # the messages are lost; only the rows remain
            for model, field in ((Extraction, "created_at"), (Question, "created_at"),
                                 (MemoryVerdictJob, "updated_at"), (BuildJob, "created_at")):  # fmt: skip
                age(model, field, an_hour_ago)

            worker = start_worker(self.queue, **llm_env(self.model), **{MEDIA_ENV: self.media})
            self.addCleanup(kill, worker)
            # Beat is back: each sweep runs once (in turn, so each finds the queue idle, as
            # a minute apart would), and the worker drains what it sent.
            self.sweep_and_drain(extractions_sweep, 2, Extraction.objects.all(), "status", "done")
            self.sweep_and_drain(questions_sweep, 2, Question.objects.all(), "status", "answered")
            self.sweep_and_drain(verdict_jobs_sweep, 2, MemoryVerdictJob.objects.all(), "state", "done")
            self.sweep_and_drain(jobs_sweep, 1, BuildJob.objects.all(), "state", "done")

        # Each exactly once: the never-sent jobs ran once, the dead worker's jobs once more.
        assert [e.attempts for e in Extraction.objects.order_by("pk")] == [1, 2]
        for extraction in extractions:
            chunks = SourceChunk.objects.filter(source_id=extraction.document.source_id)
            assert sorted(chunks.values_list("ordinal", flat=True)) == [0, 1, 2]
        assert [(q.answer, q.attempts) for q in Question.objects.order_by("pk")] == [
            (ANSWER["answer"], 1),
            (ANSWER["answer"], 2),
        ]
        assert [(j.outcome, j.attempts) for j in MemoryVerdictJob.objects.order_by("pk")] == [
            ("contradiction", 1),
            ("contradiction", 2),
        ]
        for old, new in pairs:
            old.refresh_from_db()
            assert (old.status, old.contradiction_losses) == (Status.DEPRECATED, 1)
            assert MemoryLink.objects.filter(from_memory=new, to_memory=old, type=LinkType.SUPERSEDES).count() == 1
        assert Memory.objects.count() == 4
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        assert BuildChange.objects.filter(build=build).count() == 3
        assert Revision.objects.filter(path__startswith="imports/hour/").count() == 3

    def sweep_and_drain(self, sweep: Any, sent: int, rows: QuerySet[Any], field: str, state: str) -> None:
        assert queue_idle()
        assert sweep() == sent, sweep.__name__
        wait_for(lambda: finished(rows, field, state) and queue_idle(), STARTUP, f"the jobs {sweep.__name__} sent")


def age(model: type[Model], field: str, when: dt.datetime) -> None:
    """Move every row's ``field`` back to ``when`` (the hour passed)."""
    model._default_manager.update(**{field: when})
