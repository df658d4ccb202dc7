"""The exact-scan-or-HNSW rule: written once, the same in Python and in SQL."""

from __future__ import annotations

import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from brain.vector_scan import ScanRule, table_rows_sql

TABLE_ROWS = [-1.0, 0.0, 1.0, 37.0, 1e4, 1e5, 1e6]
RULES = st.builds(ScanRule, limit=st.integers(0, 100_000), fraction=st.sampled_from([0.01, 0.1, 0.5, 1.0, 2.0]))


class VectorScanRuleTests(TestCase):
    @settings(max_examples=300, deadline=None)
    @given(
        rule=RULES, visible=st.integers(0, 200_000), table_rows=st.sampled_from([-1.0, 0.0, 1.0, 37.0, 1e4, 1e5, 1e6])
    )
    def test_python_and_sql_agree(self, rule: ScanRule, visible: int, table_rows: float) -> None:
        expression, params = rule.sql("SELECT %s::bigint", "SELECT %s::real")
        # The inputs become literals; the rule's own four parameters stay bound.
        bound = expression.replace("(SELECT %s::bigint)", str(visible)).replace(
            "(SELECT %s::real)", f"({table_rows!r}::real)"
        )
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {bound}", params)
            (in_sql,) = cursor.fetchone()  # type: ignore[misc]
        assert in_sql == rule.exact(visible, table_rows)

    def test_the_shortcut_never_says_exact_when_the_rule_would_not(self) -> None:
        rule = ScanRule(limit=50_000)
        assert rule.exact_without_counting(10_000)
        assert not rule.exact_without_counting(60_000)
        assert not rule.exact_without_counting(-1)  # never analysed: count instead
        assert not ScanRule(limit=1000, fraction=0.1).exact_without_counting(5000)

    def test_only_table_names_reach_the_sql(self) -> None:
        assert "corpus_page" in table_rows_sql("corpus_page")
        for bad in ("corpus_page'; drop table x; --", "Corpus", ""):
            with pytest.raises(ValueError, match="not a table name"):
                table_rows_sql(bad)
