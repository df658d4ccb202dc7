"""``corpus_livechunk`` (the lexical arm's index) always equals the chunks of the live pages'
current revisions, whoever writes: promotion, a new revision, retirement, a bulk load."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from corpus.livechunks import livechunks_check, livechunks_rebuild
from corpus.models import Chunk, LiveChunk, Page, Revision, RevisionChunk
from corpus.search import search
from corpus.services import page_retire
from grants.principals import SYSTEM, Principal
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


def lexical_paths(principal: Principal, query: str) -> list[str]:
    return [r.path for r in search(principal=principal, query=query, arms=("lexical",)).results]


class LiveChunkCheckTests(BrainTestCase):
    """``manage.py livechunks_check [--repair]``: the operator's way to find and mend drift."""

    def setUp(self) -> None:
        super().setUp()
        publish("topics/a.md", title="A", body="# A\n\n## One\n\nThe quokka lives on an island.\n")
        publish("topics/b.md", title="B", body="# B\n\n## Two\n\nThe numbat eats termites.\n")
        publish("topics/a.md", title="A", body="# A\n\n## One\n\nThe quokka hops on Rottnest.\n")

    def test_a_true_table_passes(self) -> None:
        report = livechunks_check()
        assert report.ok
        assert report.rows == len(expected()) == 2
        out = StringIO()
        call_command("livechunks_check", stdout=out)
        assert "as expected" in out.getvalue()

    def test_drift_is_counted_refused_and_repaired(self) -> None:
        numbat = LiveChunk.objects.get(revision__current_of__path="topics/b.md")
        quokka = LiveChunk.objects.get(revision__current_of__path="topics/a.md")
        retired_revision = Revision.objects.filter(path="topics/a.md").exclude(current_of__isnull=False).get()
        old_chunk = RevisionChunk.objects.get(revision=retired_revision).chunk_id
        with connection.cursor() as cursor:
            # What a load with triggers off, or a hand edit, leaves behind.
            cursor.execute("DELETE FROM corpus_livechunk WHERE id = %s", [numbat.pk])
            cursor.execute(
                "INSERT INTO corpus_livechunk (revision_id, chunk_id, search_vector)"
                " SELECT %s, id, search_vector FROM corpus_chunk WHERE id = %s",
                [retired_revision.pk, old_chunk],
            )
            cursor.execute(
                "INSERT INTO corpus_livechunk (revision_id, chunk_id, search_vector)"
                " SELECT revision_id, chunk_id, search_vector FROM corpus_livechunk WHERE id = %s",
                [quokka.pk],
            )
            cursor.execute(
                "UPDATE corpus_livechunk SET search_vector = to_tsvector('english', 'wombat') WHERE id = %s",
                [quokka.pk],
            )
        report = livechunks_check()
        assert (report.rows, report.missing, report.extra, report.stale) == (3, 1, 2, 1)
        assert not report.ok
        assert not report.triggers_off
        assert lexical_paths(self.bob, "numbat") == []  # what the drift costs a reader

        with pytest.raises(CommandError, match="--repair"):
            call_command("livechunks_check", stdout=StringIO())
        out = StringIO()
        call_command("livechunks_check", "--repair", stdout=out)
        assert "rebuilt: 2 rows" in out.getvalue()
        assert "as expected" in out.getvalue()
        assert live() == expected()
        assert livechunks_check().ok
        assert lexical_paths(self.bob, "numbat") == ["topics/b.md"]
        assert lexical_paths(self.bob, "Rottnest") == ["topics/a.md"]

    def test_a_repeated_section_is_one_chunk_twice_and_still_true(self) -> None:
        publish("topics/c.md", title="C", body="# C\n\n## Same\n\nEchidnas.\n\n## Same\n\nEchidnas.\n")
        assert LiveChunk.objects.filter(revision__current_of__path="topics/c.md").count() == 2
        assert livechunks_check().ok
        assert livechunks_rebuild() == 4
        assert livechunks_check().ok

    def test_a_disabled_trigger_is_named_and_not_papered_over(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE refuses pending FK checks
            cursor.execute("ALTER TABLE corpus_page DISABLE TRIGGER corpus_page_livechunk")
        assert livechunks_check().triggers_off == ("corpus_page.corpus_page_livechunk",)
        with pytest.raises(CommandError, match=r"corpus_page\.corpus_page_livechunk is missing or disabled"):
            call_command("livechunks_check", "--repair", stdout=StringIO())
