"""The lexical arm's term statistics: how many chunks hold each lexeme.

``lexeme_statistics_refresh`` counts, with PostgreSQL's ``ts_stat``, the lexemes of every chunk
of a live page of ordinary sensitivity (restricted and secret pages never shape a ranking),
and replaces ``corpus_lexemestatistic`` in one transaction (readers keep the old counts until
it commits; nothing is locked against search). Beat runs it every few minutes and it does
nothing when the counted chunks did not change. Inverse document frequencies tolerate
staleness: a page promoted a minute ago is found, its words just weigh as before.
"""

from __future__ import annotations

from django.db import connection, transaction

COUNTED_CHUNKS = """SELECT c.search_vector FROM corpus_chunk c
                     WHERE EXISTS (SELECT 1 FROM corpus_revisionchunk rc
                                     JOIN corpus_page p ON p.current_revision_id = rc.revision_id
                                    WHERE rc.chunk_id = c.id AND p.sensitivity = 0)"""


def lexeme_statistics_refresh(*, force: bool = False) -> int | None:
    """Recount when the counted chunks changed (or ``force``); returns how many were counted,
    or None when nothing changed."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({COUNTED_CHUNKS}) counted")  # noqa: S608 (a constant)
        total = int(cursor.fetchone()[0])  # type: ignore[index]
        cursor.execute("SELECT chunks FROM corpus_lexemestatistic WHERE lexeme = ''")
        row = cursor.fetchone()
        if not force and row is not None and int(row[0]) == total:
            return None
        cursor.execute("DELETE FROM corpus_lexemestatistic")
        cursor.execute(
            "INSERT INTO corpus_lexemestatistic (lexeme, chunks) SELECT word, ndoc FROM ts_stat(%s)"
            " UNION ALL SELECT '', %s",
            [COUNTED_CHUNKS, total],
        )
    return total
