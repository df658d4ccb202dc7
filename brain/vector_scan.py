"""Exact scan or HNSW: one rule for every vector search (page chunks, memories).

A caller who sees few rows gets exact distances over just those rows; everyone else walks
the HNSW index with iterative scanning. Why: HNSW treats a small, filtered-in set as an
island of its graph — a caller who sees 2 % of the corpus, or a topic with a handful of
memories among 50k, is found late or not at all even with a wide beam — while scanning a
few thousand visible rows exactly costs less than walking past thousands of hidden ones.

The rule is written once (``ScanRule``) and used two ways: in Python (memory recall asks
before it builds its query) and as SQL (page search decides inside its one statement, so
the choice costs no round trip). ``tests/brain/test_vector_scan.py`` checks the two agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import connection


@dataclass(frozen=True)
class ScanRule:
    """Exact when at most ``limit`` rows are visible and, with ``fraction`` < 1, at most that
    share of the table (by the planner's row estimate; unknown before the first ANALYZE)."""

    limit: int
    fraction: float = 1.0

    def exact(self, visible: int, table_rows: float) -> bool:
        """The rule in Python; ``table_rows`` is ``pg_class.reltuples`` (-1: never analysed)."""
        if self.fraction >= 1 or table_rows < 0:
            cap = float(self.limit)
        else:
            cap = min(float(self.limit), max(1.0, self.fraction * table_rows))
        return visible <= cap

    def exact_without_counting(self, table_rows: float) -> bool:
        """True when the whole table is within the rule, so no count is needed (the count is a
        scan of a wide table: 34 ms of an 84 ms recall at 50k memories). Stale statistics can
        only err towards the exact scan, which is always right, only slower."""
        return table_rows > 0 and self.exact(int(table_rows), table_rows)

    def exact_for(self, visible: Any, table: str) -> bool:
        """The rule for a queryset of the caller's visible rows of ``table``: no count when the
        whole table is within it (or empty), else a count that stops past the limit."""
        rows = table_rows(table)
        if rows == 0 or self.exact_without_counting(rows):  # 0: empty, counting is free
            return True
        return self.exact(visible[: self.limit + 1].count(), rows)

    def sql(self, visible_sql: str, table_rows_sql: str) -> tuple[str, list[Any]]:
        """The same rule as an SQL boolean over two scalar expressions."""
        expression = (
            f"({visible_sql}) <= LEAST(%s, CASE WHEN %s >= 1 OR ({table_rows_sql}) < 0 THEN %s"
            f" ELSE GREATEST(1, %s * ({table_rows_sql})) END)"
        )
        return expression, [self.limit, self.fraction, self.limit, self.fraction]


_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def table_rows_sql(table: str) -> str:
    """The planner's row estimate of ``table``, a table name from our own code (checked)."""
    if not _IDENTIFIER.fullmatch(table):
        raise ValueError(f"not a table name: {table!r}")
    return f"(SELECT reltuples FROM pg_class WHERE oid = '{table}'::regclass)"  # noqa: S608 (checked above)


def table_rows(table: str) -> float:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {table_rows_sql(table)}")
        row = cursor.fetchone()
    return float(row[0]) if row is not None and row[0] is not None else -1.0


def hnsw_settings_sql(ef_search: int) -> tuple[str, list[Any]]:
    """``set_config`` calls (this transaction only) for an HNSW walk: iterative scanning in strict
    order — keep walking until LIMIT rows pass the access filter, so a caller who sees 5 % still
    gets k results — and the beam width. A select list, to combine with other settings."""
    return (
        "set_config('hnsw.iterative_scan', 'strict_order', true), set_config('hnsw.ef_search', %s, true)",
        [str(ef_search)],
    )
