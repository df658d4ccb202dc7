"""The lexical arm's term statistics: how many chunks hold each lexeme.

``lexeme_statistics_refresh`` counts, with PostgreSQL's ``ts_stat``, the lexemes of every chunk
of a live page of ordinary sensitivity (restricted and secret pages never shape a ranking),
and replaces ``corpus_lexemestatistic`` in one transaction (readers keep the old counts until
it commits; nothing is locked against search). Beat runs it every few minutes and it does
nothing when the counted chunks did not change: their ids (content hashes) are summed into a
fingerprint, kept in the row ``FINGERPRINT`` (no lexeme holds a space) beside the total in the
row ``''`` — an edit that keeps the number of chunks still changes it. Inverse document frequencies tolerate
staleness: a page promoted a minute ago is found, its words just weigh as before.
"""

from __future__ import annotations

from django.db import connection, transaction

COUNTED_CHUNKS = """SELECT c.search_vector FROM corpus_chunk c
                     WHERE EXISTS (SELECT 1 FROM corpus_revisionchunk rc
                                     JOIN corpus_page p ON p.current_revision_id = rc.revision_id
                                    WHERE rc.chunk_id = c.id AND p.sensitivity = 0)"""


FINGERPRINT = " fingerprint"
COUNTED_IDS = COUNTED_CHUNKS.replace("SELECT c.search_vector", "SELECT c.id", 1)


def lexeme_statistics_refresh(*, force: bool = False) -> int | None:
    """Recount when the counted chunks changed (or ``force``); returns how many were counted,
    or None when nothing changed."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), (coalesce(sum(hashtextextended(id, 0)), 0) % 2147483647)::integer"  # noqa: S608
            f" FROM ({COUNTED_IDS}) counted"
        )
        total, fingerprint = (int(value) for value in cursor.fetchone())  # type: ignore[union-attr]
        cursor.execute("SELECT lexeme, chunks FROM corpus_lexemestatistic WHERE lexeme IN ('', %s)", [FINGERPRINT])
        stored = dict(cursor.fetchall())
        if not force and stored == {"": total, FINGERPRINT: fingerprint}:
            return None
        cursor.execute("DELETE FROM corpus_lexemestatistic")
        cursor.execute(
            "INSERT INTO corpus_lexemestatistic (lexeme, chunks) SELECT word, ndoc FROM ts_stat(%s)"
            " UNION ALL SELECT '', %s UNION ALL SELECT %s, %s",
            [COUNTED_CHUNKS, total, FINGERPRINT, fingerprint],
        )
    return total
