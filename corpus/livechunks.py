"""``corpus_livechunk`` checked against what it is derived from, and rebuilt.

Two database triggers keep the table (migration corpus 0018) and nothing in Python writes it in
normal operation. This module is for the operator: a load run with triggers off
(``session_replication_role = replica``), a disabled trigger, or a change of the chunks'
search-vector expression leaves it stale, and the lexical arm then misses live chunks or
matches chunks of retired revisions. ``livechunks_check`` says which; ``livechunks_rebuild``
makes it true again. Both are behind ``manage.py livechunks_check [--repair]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction

TRIGGERS = (
    ("corpus_page", "corpus_page_livechunk"),
    ("corpus_revisionchunk", "corpus_revisionchunk_livechunk"),
)

# What the table must hold: every chunk of every page's current revision (EXPECTED_IDS, what
# the check compares), with its own vector (EXPECTED, what a rebuild inserts).
EXPECTED_IDS = """SELECT rc.revision_id, rc.chunk_id
                    FROM corpus_page p
                    JOIN corpus_revisionchunk rc ON rc.revision_id = p.current_revision_id"""
EXPECTED = f"""SELECT e.revision_id, e.chunk_id, c.search_vector
                 FROM ({EXPECTED_IDS}) e JOIN corpus_chunk c ON c.id = e.chunk_id"""  # noqa: S608 (constants)


@dataclass(frozen=True)
class LiveChunkReport:
    """How ``corpus_livechunk`` differs from the live pages' chunks."""

    rows: int
    missing: int  # chunks of live revisions the table lacks: the lexical arm cannot find them
    extra: int  # rows of chunks no longer live, or duplicates: it may find what is gone
    stale: int  # rows whose search vector is not their chunk's
    triggers_off: tuple[str, ...]  # triggers absent or disabled: the table will drift again

    @property
    def rows_true(self) -> bool:
        return not (self.missing or self.extra or self.stale)

    @property
    def ok(self) -> bool:
        return self.rows_true and not self.triggers_off


def livechunks_check() -> LiveChunkReport:
    """Compare the table with the live pages' chunks (read-only, one statement: one snapshot).

    Rows are compared as multisets of (revision, chunk): a section repeated word for word is
    the same chunk twice in its revision, and twice in the table.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH expected AS (SELECT revision_id, chunk_id, count(*) AS n FROM ({EXPECTED_IDS}) e GROUP BY 1, 2),
                     present AS (SELECT revision_id, chunk_id, count(*) AS n FROM corpus_livechunk GROUP BY 1, 2)
                SELECT coalesce(sum(p.n), 0),
                       coalesce(sum(greatest(coalesce(e.n, 0) - coalesce(p.n, 0), 0)), 0),
                       coalesce(sum(greatest(coalesce(p.n, 0) - coalesce(e.n, 0), 0)), 0),
                       (SELECT count(*) FROM corpus_livechunk lc JOIN corpus_chunk c ON c.id = lc.chunk_id
                         WHERE lc.search_vector IS DISTINCT FROM c.search_vector),
                       ARRAY(SELECT tgname::text FROM pg_trigger
                              WHERE NOT tgisinternal AND tgenabled <> 'D' AND tgname = ANY(%s))
                  FROM expected e FULL JOIN present p USING (revision_id, chunk_id)""",  # noqa: S608 (constants)
            [[name for _, name in TRIGGERS]],
        )
        rows, missing, extra, stale, enabled = cursor.fetchone()  # type: ignore[misc]
    off = tuple(f"{table}.{name}" for table, name in TRIGGERS if name not in set(enabled))
    return LiveChunkReport(rows=int(rows), missing=int(missing), extra=int(extra), stale=stale, triggers_off=off)


def livechunks_rebuild() -> int:
    """Replace the table's rows with the live pages' chunks in one transaction; returns the rows.

    Searches go on reading the old rows until it commits. Writers that would change the table
    (a promotion, a retirement) wait for it: the lock taken first is the one their triggers
    need, so none of their rows can slip between the delete and the insert.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE corpus_livechunk IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute("DELETE FROM corpus_livechunk")
        cursor.execute(f"INSERT INTO corpus_livechunk (revision_id, chunk_id, search_vector) {EXPECTED}")
        return int(cursor.rowcount)
