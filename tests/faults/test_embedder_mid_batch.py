"""The embedding model failing mid-batch: writes commit, vectors come later, search says so.

``FlakyEmbedder`` is the real local model with a budget: it embeds that many texts, then
fails part-way through a call as an endpoint that dies mid-request would — the texts
before the failure were computed, and the call still raises ``EmbeddingError``. It is
installed as the process's provider (``brain.embeddings._embedder``), so every caller goes
through the real ``embeddings.embed``.

- memories and document chunks are stored without vectors, found by words meanwhile
  (search and recall flag ``degraded``; the pages show the banner), and the backfill tasks
  embed them once the model is back — a backfill that fails mid-run keeps what it wrote;
- page chunks likewise: a build step (or a page write) that meets the failure commits its
  drafts with chunks that have no vector yet; ``corpus.backfill_embeddings`` fills them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from unittest import mock

from brain import embeddings
from brain.vectors import refresh_stale_vectors
from builds import tasks as build_tasks
from builds.driver import import_job_create, job_step
from builds.models import Build, BuildJob
from corpus import search as search_module
from corpus.models import Chunk, Revision, SourceChunk
from corpus.search import search
from corpus.selectors import source_search
from grants.principals import SYSTEM
from grants.services import grant_issue
from ingest.services import document_ingest, extraction_run
from ingest.tasks import source_chunks_backfill_task
from memory.models import Memory
from memory.services import duplicate_text, memory_backfill_embeddings, memory_remember
from tests.base import BrainTestCase, page_markdown, publish
from tests.faults.test_killed_workers import NOTES, PRICE_LIST


class FlakyEmbedder:
    """The real embedder until ``budget`` texts are embedded; then every call fails, after
    embedding whatever was left of the budget."""

    def __init__(self, budget: int) -> None:
        self.real = embeddings.get_embedder()
        self.model_id = self.real.model_id
        self.budget = budget
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> embeddings.FloatMatrix:
        self.calls.append(len(texts))
        if len(texts) <= self.budget:
            self.budget -= len(texts)
            return self.real.embed(texts)
        self.real.embed(texts[: self.budget])  # the part of the batch done before the failure
        self.budget = 0
        raise embeddings.EmbeddingError("embedding endpoint failed (ConnectionError)")


class EmbedderMidBatchTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.alice, path="imports/", permission="suggest")
        publish(PRICE_LIST, title="Price list",
                body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros per seat per month.\n")  # fmt: skip

    def setUp(self) -> None:
        search_module.query_vector_cache.clear()
        self.patchers: list[Any] = []
        self.addCleanup(self.recovered)

    def flaky(self, budget: int) -> FlakyEmbedder:
        """Install an embedder that fails after ``budget`` texts, until ``recovered``."""
        self.recovered()  # wrap the real model, never another flaky one
        flaky = FlakyEmbedder(budget)
        patcher = mock.patch.object(embeddings, "_embedder", flaky)
        patcher.start()
        self.patchers.append(patcher)
        return flaky

    def recovered(self) -> None:
        """The real model is back (and no query vector of the outage is cached)."""
        while self.patchers:
            self.patchers.pop().stop()
        search_module.query_vector_cache.clear()

    def test_an_extraction_commits_its_text_and_the_backfill_adds_the_vectors(self) -> None:
        flaky = self.flaky(budget=1)
        extraction = document_ingest(actor=self.alice, filename="notes.md", data=NOTES.encode(), enqueue=False)
        assert extraction_run(extraction.pk) == "done"
        assert flaky.calls == [3]  # one batch of three chunks, failed after the first
        chunks = SourceChunk.objects.filter(source_id=extraction.document.source_id)
        assert chunks.count() == 3
        assert chunks.filter(embedding__isnull=True).count() == 3  # none half: all wait for the backfill
        assert [s.pk for s in source_search(principal=self.alice, query="Contoso discount")] == [
            extraction.document.source_id
        ]

        self.recovered()
        source_chunks_backfill_task()
        assert not chunks.filter(embedding__isnull=True).exists()
        assert set(chunks.values_list("embedding_model", flat=True)) == {flaky.model_id}

    def test_a_memory_captured_mid_outage_is_kept_recalled_by_words_and_back_filled(self) -> None:
        self.flaky(budget=0)
        texts = ["Northwind renews in March.", "Contoso wants a discount.", "Fabrikam moves to the Team plan."]
        captured = [memory_remember(actor=self.alice, content=text) for text in texts]
        assert [capture.outcome for capture in captured] == ["stored", "stored", "stored"]
        assert Memory.objects.filter(embedding__isnull=True).count() == 3

        self.client.force_login(self.alice.user)
        page = self.client.get("/memory/", {"q": "Contoso discount"}).content.decode()
        assert "Keyword recall only: semantic recall is unavailable right now." in page
        assert "Contoso wants a discount." in page

        # The backfill itself meets the failing model mid-run: it keeps the batch it wrote.
        self.flaky(budget=2)
        written = refresh_stale_vectors(Memory, text_field="content", embed_input=duplicate_text, batch=2)
        assert written == 2
        assert Memory.objects.filter(embedding__isnull=True).count() == 1
        self.recovered()
        assert memory_backfill_embeddings() == 1
        assert not Memory.objects.filter(embedding__isnull=True).exists()
        page = self.client.get("/memory/", {"q": "Contoso discount"}).content.decode()
        assert "Keyword recall only" not in page

    def test_search_answers_by_words_with_the_banner_while_the_model_is_down(self) -> None:
        self.flaky(budget=0)
        self.client.force_login(self.bob.user)
        page = self.client.get("/search", {"q": "Team plan seat price"}).content.decode()
        assert "Keyword results only: semantic search is unavailable right now." in page
        assert "Price list" in page
        self.recovered()
        page = self.client.get("/search", {"q": "Team plan seat price"}).content.decode()
        assert "Keyword results only" not in page

    def test_a_build_step_failing_mid_batch_commits_and_the_backfill_adds_the_vectors(self) -> None:
        from corpus.tasks import chunks_backfill_task

        body = "# Page {n}\n\n## Facts\n\nFact number {n} about the outage.\n"
        files = [
            (f"imports/outage/page-{n}.md", page_markdown(title=f"Page {n}", body=body.format(n=n))) for n in range(4)
        ]
        with mock.patch.object(build_tasks.build_job_step_task, "delay"), self.captureOnCommitCallbacks(execute=True):
            build = import_job_create(requester=self.alice, files=files, title="Imported during an outage")
        job = BuildJob.objects.get(build=build)
        flaky = self.flaky(budget=2)
        with mock.patch.object(build_tasks.build_job_step_task, "delay"):
            assert job_step(job.pk) == "done"
        assert flaky.calls == [4]
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW  # the drafts are written, nothing waits
        assert Revision.objects.filter(path__startswith="imports/outage/").count() == 4
        waiting = Chunk.objects.filter(embedding__isnull=True)
        assert waiting.count() > 0
        assert set(waiting.values_list("embedding_model", flat=True)) == {""}

        self.recovered()
        chunks_backfill_task()
        assert not Chunk.objects.filter(embedding__isnull=True).exists()
        assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {embeddings.model_id()}

    def test_a_page_written_while_the_model_is_down_is_found_by_words_then_by_meaning(self) -> None:
        from corpus.services import revision_create, revision_promote
        from corpus.tasks import chunks_backfill_task

        self.flaky(budget=0)
        markdown = page_markdown(title="Parking", body="# Parking\n\n## Spaces\n\nVisitors park in bay C.\n")
        revision, stats = revision_create(actor=SYSTEM, path="topics/parking.md", markdown=markdown)
        assert stats.new > 0
        assert stats.embedded == 0
        revision_promote(actor=SYSTEM, revision=revision)
        found = search(principal=self.alice, query="visitors park bay")
        assert found.degraded  # the query could not be embedded either: keyword results, flagged
        assert [result.path for result in found.results][:1] == ["topics/parking.md"]
        self.recovered()
        chunks_backfill_task()
        found = search(principal=self.alice, query="where do guests leave their car")
        assert "topics/parking.md" in [result.path for result in found.results]
