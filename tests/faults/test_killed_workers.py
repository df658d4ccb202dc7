"""A worker SIGKILLed mid-job costs one sweep: the extraction, the answer, the memory
verdict and a large vault import each complete exactly once afterwards.

Each test runs a real Celery worker on a private queue, holds the job at its model call (a
fake server across the network), kills the worker's process group, lets the lease run out
(moved back in time: ten minutes in production), runs the sweep beat would run, and lets a
fresh worker finish. (Builds: ``tests/builds/test_driver.py``.)
"""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import subprocess
import tempfile
import zipfile
from typing import Any

from django.test import TransactionTestCase
from django.utils import timezone

from answers.models import Question
from answers.services import question_ask, questions_sweep
from corpus.models import Source, SourceChunk
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from ingest.models import Extraction
from ingest.services import document_ingest, extractions_sweep
from memory.models import LinkType, Memory, MemoryEvent, MemoryLink, MemoryVerdictJob, Status, VaultImport
from memory.services import memory_remember
from memory.vault_jobs import upload_read, vault_import_queue, vault_imports_sweep
from memory.verdict_jobs import verdict_jobs_sweep
from tests.base import publish
from tests.faults.servers import HoldingServer, chat, embeddings_env, embeddings_reply, llm_env, llm_settings
from tests.faults.workers import MEDIA_ENV, kill, private_queue, shared_media, start_worker, wait_for

PRICE_LIST = "topics/pricing/price-list.md"
CANTEEN = "The staff canteen closes at 3 pm."
# Close enough to be judged (0.88), and no contradiction the model-free check can read.
CANTEEN_LATER = "The staff canteen stays open until 5 pm."
NOTES = (
    "# Renewal notes\n\n## Northwind\n\nNorthwind renews in March for three years.\n\n"
    "## Contoso\n\nContoso asked for a discount on the second year.\n\n"
    "## Fabrikam\n\nFabrikam moves to the Team plan next quarter.\n"
)
STARTUP = 90.0  # a cold worker: Django, Celery and (for search) the embedding model


def past(seconds: int = 1) -> dt.datetime:
    return timezone.now() - dt.timedelta(seconds=seconds)


class KilledWorkerTestCase(TransactionTestCase):
    """A private queue, the workers started by the test (all killed at the end), a member."""

    def setUp(self) -> None:
        self.queue = self.enterContext(private_queue())
        self.workers: list[subprocess.Popen[bytes]] = []
        self.addCleanup(self.kill_all)
        self.alice = member_create(actor=SYSTEM, username="alice")

    def start(self, **env: str) -> subprocess.Popen[bytes]:
        worker = start_worker(self.queue, **env)
        self.workers.append(worker)
        return worker

    def kill_all(self) -> None:
        for worker in self.workers:
            kill(worker)

    def server(self, reply: Any) -> HoldingServer:
        """A fake model server that holds its first request until the worker is dead."""
        server = HoldingServer(reply, hold={1})
        self.addCleanup(server.close)
        return server


class KilledWorkerTests(KilledWorkerTestCase):
    def test_a_killed_extraction_is_extracted_once(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        embedder = self.server(embeddings_reply)
        media = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, media, True)
        env = {**embeddings_env(embedder), MEDIA_ENV: media}
        with shared_media(media):
            worker = self.start(**env)
            extraction = document_ingest(actor=self.alice, filename="notes.md", data=NOTES.encode())
            wait_for(embedder.held.is_set, STARTUP, "the extraction to call the embedder")
            assert Extraction.objects.get(pk=extraction.pk).status == Extraction.Status.RUNNING

            kill(worker)  # converted and masked, not yet written
            embedder.release()
            Extraction.objects.filter(pk=extraction.pk).update(lease_expires_at=past())
            assert extractions_sweep() == 1
            self.start(**env)
            wait_for(lambda: Extraction.objects.get(pk=extraction.pk).status == "done", STARTUP, "the extraction")

        extraction.refresh_from_db()
        assert extraction.attempts == 2
        source = Source.objects.get(pk=extraction.document.source_id)
        assert "Northwind renews in March" in source.text
        chunks = SourceChunk.objects.filter(source=source)
        # One set of chunks, each with its vector: written once, by the second worker.
        assert sorted(chunks.values_list("ordinal", flat=True)) == [0, 1, 2]
        assert not chunks.filter(embedding__isnull=True).exists()
        assert len(embedder.requests) == 2  # the killed run's call and the finishing run's

    def test_a_killed_answer_is_answered_once(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="read")
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month.\n")  # fmt: skip
        reply = {"answer": "The Team plan is 20 euros a seat a month.", "citations": [f"{PRICE_LIST}#plans"]}
        model = self.server(chat(lambda body, n: {"role": "assistant", "content": json.dumps(reply)}))
        worker = self.start(**llm_env(model))
        question = question_ask(actor=self.alice, text="How much does the Team plan cost?")
        wait_for(model.held.is_set, STARTUP, "the question to reach the model")
        assert Question.objects.get(pk=question.pk).status == Question.Status.RUNNING

        kill(worker)
        model.release()
        Question.objects.filter(pk=question.pk).update(lease_expires_at=past())
        assert questions_sweep() == 1
        self.start(**llm_env(model))
        wait_for(lambda: Question.objects.get(pk=question.pk).status == "answered", STARTUP, "the answer")

        question.refresh_from_db()
        assert question.answer == reply["answer"]
        assert question.citations == reply["citations"]
        assert question.attempts == 2
        assert len(model.requests) == 2

    def test_a_killed_memory_verdict_is_applied_once(self) -> None:
        model = self.server(chat(lambda body, n: {"role": "assistant", "content": '{"verdict": "contradiction"}'}))
        with llm_settings(model):
            worker = self.start(**llm_env(model))
            old = memory_remember(actor=self.alice, content=CANTEEN).memory
            new = memory_remember(actor=self.alice, content=CANTEEN_LATER).memory
            job = MemoryVerdictJob.objects.get(new_memory_id=new.pk, old_memory_id=old.pk)
            wait_for(model.held.is_set, STARTUP, "the verdict to reach the model")
            assert MemoryVerdictJob.objects.get(pk=job.pk).state == MemoryVerdictJob.State.RUNNING

            kill(worker)
            model.release()
            MemoryVerdictJob.objects.filter(pk=job.pk).update(lease_expires_at=past())
            assert verdict_jobs_sweep() == 1
            self.start(**llm_env(model))
            wait_for(lambda: MemoryVerdictJob.objects.get(pk=job.pk).state == "done", STARTUP, "the verdict")

        job.refresh_from_db()
        assert (job.outcome, job.attempts) == ("contradiction", 2)
        old.refresh_from_db()
        new.refresh_from_db()
        assert old.status == Status.DEPRECATED
        assert (old.contradiction_losses, new.contradiction_wins) == (1, 1)
        assert MemoryLink.objects.filter(from_memory=new, to_memory=old, type=LinkType.SUPERSEDES).count() == 1
        deprecations = MemoryEvent.objects.filter(memory_id=old.pk, action=MemoryEvent.Action.STATUS_CHANGED)
        assert deprecations.count() == 1
        assert Memory.objects.count() == 2
        assert len(model.requests) == 2

    def test_a_killed_vault_import_is_imported_once(self) -> None:
        notes = [
            "The ferns in the meeting room want water every Tuesday.",
            "Invoices above five thousand euros need the finance lead's signature.",
            "The staging database is rebuilt from production every Sunday night.",
            "New starters get their laptop from the front desk on day one.",
        ]
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for number, text in enumerate(notes):
                archive.writestr(f"Garden/note-{number}.md", text)
        holding = HoldingServer(embeddings_reply, hold={3})  # the third note's vector waits
        finishing = HoldingServer(embeddings_reply)
        for server in (holding, finishing):
            self.addCleanup(server.close)
        worker = self.start(**embeddings_env(holding))
        job = vault_import_queue(
            actor=self.alice, upload=upload_read("obsidian", buffer.getvalue()), charge=lambda notes: None
        )
        wait_for(holding.held.is_set, STARTUP, "the import to embed its third note")
        running = VaultImport.objects.get(pk=job.pk)
        assert (running.state, running.notes_total) == ("running", 4)
        assert not Memory.objects.filter(author=self.alice).exists()  # two stored, none visible

        kill(worker)  # mid-transaction: its two notes are rolled back
        holding.release()
        VaultImport.objects.filter(pk=job.pk).update(lease_expires_at=past())
        assert vault_imports_sweep() == 1
        self.start(**embeddings_env(finishing))
        wait_for(lambda: VaultImport.objects.get(pk=job.pk).state == "done", STARTUP, "the import")

        job.refresh_from_db()
        assert job.attempts == 2
        assert job.report is not None
        assert job.report["outcomes"] == {"stored": 4}
        assert sorted(Memory.objects.filter(author=self.alice).values_list("origin", flat=True)) == [
            f"obsidian:Garden/note-{number}.md" for number in range(4)
        ]
        assert len(finishing.requests) == 4  # the second worker embedded every note once
