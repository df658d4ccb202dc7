"""A worker that outlives its lease writes nothing: the one that took the job over does.

A slow worker is not a dead one. When its lease runs out the sweep hands the job to another
worker; if the first then finishes after all, its result must not land a second time (a
second set of chunks, an answer overwritten, a verdict applied twice). Each test holds run A
at its model call in a thread, lets the lease run out, finishes the job with run B, then
releases A.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable
from typing import Any
from unittest import mock

from django.db import connection
from django.test import TransactionTestCase
from django.utils import timezone

from answers.models import Question
from answers.services import question_ask, question_run
from brain import embeddings
from corpus.models import SourceChunk
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from ingest.models import Extraction
from ingest.services import document_ingest, extraction_run
from memory.models import LinkType, MemoryEvent, MemoryLink, MemoryVerdictJob, Status
from memory.services import memory_remember
from memory.verdict_jobs import verdict_job_run
from tests.base import publish
from tests.faults.servers import HoldingServer, chat, embeddings_reply, llm_settings
from tests.faults.test_killed_workers import CANTEEN, CANTEEN_LATER, NOTES, PRICE_LIST
from tests.faults.workers import private_queue, wait_for


class Run(threading.Thread):
    """Run ``job`` in a thread with its own database connection; ``result`` holds what it returned."""

    def __init__(self, job: Callable[[], str]) -> None:
        super().__init__(daemon=True)
        self.job = job
        self.result: str | None = None

    def run(self) -> None:
        try:
            self.result = self.job()
        finally:
            connection.close()


def past() -> dt.datetime:
    return timezone.now() - dt.timedelta(seconds=1)


class LateFinisherTests(TransactionTestCase):
    def setUp(self) -> None:
        self.enterContext(private_queue())  # the captures' messages go nowhere shared
        self.alice = member_create(actor=SYSTEM, username="alice")

    def server(self, reply: Any) -> HoldingServer:
        server = HoldingServer(reply, hold={1})
        self.addCleanup(server.close)
        return server

    def test_a_late_extraction_writes_no_second_set_of_chunks(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        endpoint = self.server(embeddings_reply)
        embedder = embeddings.OpenAICompatibleEmbedder(
            url=endpoint.url, model="fake-embedder", api_key=None, timeout=30, batch_size=32
        )
        self.enterContext(mock.patch.object(embeddings, "_embedder", embedder))
        extraction = document_ingest(actor=self.alice, filename="notes.md", data=NOTES.encode(), enqueue=False)

        late = Run(lambda: extraction_run(extraction.pk))
        late.start()
        wait_for(endpoint.held.is_set, 30, "run A to call the embedder")
        Extraction.objects.filter(pk=extraction.pk).update(lease_expires_at=past())
        assert extraction_run(extraction.pk) == "done"
        endpoint.release()
        late.join(timeout=30)

        assert late.result == "lease-lost"
        extraction.refresh_from_db()
        assert (extraction.status, extraction.attempts) == ("done", 2)
        chunks = SourceChunk.objects.filter(source_id=extraction.document.source_id)
        assert sorted(chunks.values_list("ordinal", flat=True)) == [0, 1, 2]

    def test_a_late_answer_does_not_overwrite_the_one_given(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="read")
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month.\n")  # fmt: skip

        def reply(body: dict[str, Any], number: int) -> dict[str, Any]:
            text = "Run A's answer." if number == 1 else "Run B's answer."
            return {"role": "assistant", "content": json.dumps({"answer": text, "citations": [PRICE_LIST]})}

        model = self.server(chat(reply))
        with llm_settings(model):
            question = question_ask(actor=self.alice, text="How much does the Team plan cost?", enqueue=False)
            late = Run(lambda: question_run(question.pk))
            late.start()
            wait_for(model.held.is_set, 30, "run A to ask the model")
            Question.objects.filter(pk=question.pk).update(lease_expires_at=past())
            assert question_run(question.pk) == "answered"
            model.release()
            late.join(timeout=30)

        assert late.result == "lease-lost"
        question.refresh_from_db()
        assert (question.answer, question.attempts) == ("Run B's answer.", 2)

    def test_a_late_verdict_is_not_applied_twice(self) -> None:
        model = self.server(chat(lambda body, n: {"role": "assistant", "content": '{"verdict": "contradiction"}'}))
        with llm_settings(model):
            old = memory_remember(actor=self.alice, content=CANTEEN).memory
            new = memory_remember(actor=self.alice, content=CANTEEN_LATER).memory
            job = MemoryVerdictJob.objects.get(new_memory_id=new.pk)
            late = Run(lambda: verdict_job_run(job.pk))
            late.start()
            wait_for(model.held.is_set, 30, "run A to ask the model")
            MemoryVerdictJob.objects.filter(pk=job.pk).update(lease_expires_at=past())
            assert verdict_job_run(job.pk) == "contradiction"
            model.release()
            late.join(timeout=30)

        assert late.result == "lease-lost"
        job.refresh_from_db()
        assert (job.state, job.outcome, job.attempts) == ("done", "contradiction", 2)
        old.refresh_from_db()
        new.refresh_from_db()
        assert old.status == Status.DEPRECATED
        assert (old.contradiction_losses, new.contradiction_wins) == (1, 1)
        assert MemoryLink.objects.filter(from_memory=new, to_memory=old, type=LinkType.SUPERSEDES).count() == 1
        assert MemoryEvent.objects.filter(memory_id=old.pk, action=MemoryEvent.Action.STATUS_CHANGED).count() == 1
