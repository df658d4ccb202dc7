"""``corpus_livechunk`` (the lexical arm's index) always equals the chunks of the live pages'
current revisions, whoever writes: promotion, a new revision, retirement, a bulk load."""

from __future__ import annotations

from django.db import connection

from corpus.models import Chunk, LiveChunk, Page, Revision, RevisionChunk
from corpus.search import search
from corpus.services import page_retire
from grants.principals import SYSTEM
from tests.base import BrainTestCase, publish


def expected() -> set[tuple[int, str]]:
    """(revision, chunk) of every chunk of every live page, read the long way."""
    return set(RevisionChunk.objects.filter(revision__current_of__isnull=False).values_list("revision_id", "chunk_id"))


def live() -> set[tuple[int, str]]:
    return set(LiveChunk.objects.values_list("revision_id", "chunk_id"))


class LiveChunkTests(BrainTestCase):
    def test_promotion_a_new_revision_and_retirement_keep_it_true(self) -> None:
        publish("topics/a.md", title="A", body="# A\n\n## One\n\nThe quokka lives on an island.\n")
        publish("topics/b.md", title="B", body="# B\n\nNothing to see.\n")
        assert live() == expected()
        assert len(live()) == 2
        first = Page.objects.get(path="topics/a.md").current_revision_id

        publish("topics/a.md", title="A", body="# A\n\n## Two\n\nThe numbat eats termites.\n")
        assert live() == expected()
        assert not LiveChunk.objects.filter(revision_id=first).exists()  # the old revision left
        assert [r.path for r in search(principal=self.bob, query="numbat", arms=("lexical",)).results] == [
            "topics/a.md"
        ]
        assert search(principal=self.bob, query="quokka", arms=("lexical",)).results == []

        page_retire(actor=SYSTEM, path="topics/a.md")
        assert live() == expected()
        assert len(live()) == 1
        assert search(principal=self.bob, query="numbat", arms=("lexical",)).results == []

    def test_search_vectors_are_the_chunks_own(self) -> None:
        publish("topics/c.md", title="C", body="# C\n\nPostgreSQL stores the wombat.\n")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM corpus_livechunk lc JOIN corpus_chunk c ON c.id = lc.chunk_id"
                " WHERE lc.search_vector IS DISTINCT FROM c.search_vector"
            )
            assert cursor.fetchone() == (0,)

    def test_a_bulk_load_that_creates_pages_before_linking_chunks(self) -> None:
        # The order bench/search_scale.py and the property tests use: revision, page, then chunks.
        revision = Revision.objects.create(path="topics/d.md", frontmatter={}, body="", sha256="0" * 64)
        Page.objects.create(
            path="topics/d.md", current_revision=revision, title="D", type="topic", owner=self.alice,
            status="approved", as_of="2026-11-30",
        )  # fmt: skip
        chunk = Chunk.objects.create(id="d" * 64, heading_path="D", body="The echidna lays eggs.",
                                     lexical_heading="D", lexical_body="The echidna lays eggs.")  # fmt: skip
        RevisionChunk.objects.create(revision=revision, chunk=chunk, ordinal=0)
        assert live() == expected()
        assert (revision.pk, chunk.pk) in live()
        assert [r.path for r in search(principal=self.bob, query="echidna", arms=("lexical",)).results] == [
            "topics/d.md"
        ]

        Page.objects.filter(path="topics/d.md").delete()
        assert live() == expected()
        assert (revision.pk, chunk.pk) not in live()
