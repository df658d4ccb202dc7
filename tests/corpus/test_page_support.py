"""The semantic arm's page support: each candidate page's centroid and second-best similarity."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from corpus import search as search_module
from corpus.models import Page
from corpus.page_support import apply_page_support
from corpus.search import SearchError, _Candidate, search
from tests.base import BrainTestCase, publish

PAGES = {
    "topics/garden/roses.md": "# Roses\n\n## Pruning\n\nPrune roses in late winter, above an outward bud.\n\n"
    "## Feeding\n\nFeed roses with compost in spring.\n\n## Invoices\n\nSupplier invoices are paid within 30 days.\n",
    "topics/finance/invoices.md": "# Invoices\n\n## Terms\n\nInvoices are due thirty days after issue.\n\n"
    "## Reminders\n\nA reminder goes out when an invoice is seven days overdue.\n",
    "topics/finance/single.md": "# Refunds\n\nRefunds are paid to the original card within ten days.\n",
}


def unit(vector: np.ndarray) -> np.ndarray:
    return np.asarray(vector / np.linalg.norm(vector))


class PageSupportStatementTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        for path, body in PAGES.items():
            publish(path, title=path.rsplit("/", 1)[-1], body=body)

    def page_vectors(self, path: str) -> np.ndarray:
        page = Page.objects.get(path=path)
        links = page.current_revision.chunk_links.select_related("chunk")
        return np.array([np.asarray(link.chunk.embedding, dtype=np.float64) for link in links])

    def rows(self, query: str, *, page_support: bool = True) -> list[tuple]:
        visible_sql, visible_params = search_module.visible_revisions_sql(
            self.bob, prefix=None, type=None, category=None
        )
        return search_module._candidates(
            visible_sql=visible_sql, visible_params=visible_params, vector=search_module.query_vector(query),
            tsquery=search_module.lexical_query(query), limit=10, ef_search=40, exact_pages=1000,
            exact_fraction=0.1, work_mem="32MB", page_support=page_support,
        )  # fmt: skip

    def test_each_semantic_candidate_page_gets_its_centroid_and_second_best_similarity(self) -> None:
        query = "when are invoices paid"
        q = np.asarray(search_module.query_embedding(query), dtype=np.float64)
        checked = set()
        for row in self.rows(query):
            arm, path, centroid, second = row[0], row[5], row[11], row[12]
            if arm != "semantic":
                continue
            vectors = self.page_vectors(path)
            similarities = sorted((unit(v) @ unit(q) for v in vectors), reverse=True)
            assert centroid == pytest.approx(unit(vectors.mean(axis=0)) @ unit(q), abs=1e-5)
            # A one-chunk page's second-best is its best.
            assert second == pytest.approx(similarities[1] if len(similarities) > 1 else similarities[0], abs=1e-5)
            checked.add(path)
        assert checked == set(PAGES)

    def test_a_long_page_is_judged_by_its_first_chunks(self) -> None:
        query = "when are invoices paid"
        q = unit(np.asarray(search_module.query_embedding(query), dtype=np.float64))
        first_two = self.page_vectors("topics/garden/roses.md")[:2]
        assert len(self.page_vectors("topics/garden/roses.md")) > 2
        with mock.patch("corpus.page_support.MAX_PAGE_CHUNKS", 2):
            rows = [row for row in self.rows(query) if row[0] == "semantic" and row[5] == "topics/garden/roses.md"]
        assert rows
        assert rows[0][11] == pytest.approx(unit(first_two.mean(axis=0)) @ q, abs=1e-5)
        assert rows[0][12] == pytest.approx(min(unit(v) @ q for v in first_two), abs=1e-5)

    def test_without_page_support_the_columns_are_null(self) -> None:
        rows = self.rows("when are invoices paid", page_support=False)
        assert rows
        assert all(row[11] is None and row[12] is None for row in rows)

    def test_the_relevance_floor_reads_the_chunks_own_similarity(self) -> None:
        query = "when are invoices paid"
        q = unit(np.asarray(search_module.query_embedding(query), dtype=np.float64))
        results = search(principal=self.bob, query=query, k=5)
        found = [r for r in results.results if r.semantic_rank is not None]
        assert found
        for result in found:
            page = Page.objects.get(path=result.path)
            link = page.current_revision.chunk_links.select_related("chunk").get(chunk__body=result.body)
            expected = unit(np.asarray(link.chunk.embedding, dtype=np.float64)) @ q
            assert result.semantic_similarity == pytest.approx(expected, abs=1e-5)

    def test_the_arm_with_page_support_off_ranks_by_the_best_chunk_alone(self) -> None:
        query = "when are invoices paid"
        plain = search(principal=self.bob, query=query, k=3, per_page=1, arms=("semantic",), page_support=(0.0, 0.0))
        similarities = [float(r.semantic_similarity or 0.0) for r in plain.results]
        assert similarities == sorted(similarities, reverse=True)

    def test_negative_weights_are_refused(self) -> None:
        with pytest.raises(SearchError, match="page support weights"):
            search(principal=self.bob, query="invoices", page_support=(-0.1, 0.3))


def candidate(path: str, similarity: float, rank: int) -> _Candidate:
    made = _Candidate(path=path, title=path, type="topic", category=None, heading_path="", body="")
    made.ranks["semantic"], made.raws["semantic"], made.similarity = rank, similarity, similarity
    return made


def test_a_page_about_the_question_overtakes_one_stray_paragraph() -> None:
    candidates = {
        ("c1", "stray.md"): candidate("stray.md", 0.60, 1),
        ("c2", "about.md"): candidate("about.md", 0.55, 2),
    }
    candidates[("c1", "stray.md")].page_support = (0.20, 0.10)
    candidates[("c2", "about.md")].page_support = (0.50, 0.50)
    apply_page_support(candidates, centroid_weight=0.3, second_weight=0.3)
    assert candidates[("c2", "about.md")].ranks["semantic"] == 1
    assert candidates[("c1", "stray.md")].ranks["semantic"] == 2
    assert candidates[("c2", "about.md")].raws["semantic"] == pytest.approx(0.55 + 0.15 + 0.15)
    # The chunk's own similarity is untouched.
    assert candidates[("c2", "about.md")].similarity == 0.55


def test_no_weights_and_missing_support_keep_the_arms_order() -> None:
    candidates = {("c1", "a.md"): candidate("a.md", 0.60, 1), ("c2", "b.md"): candidate("b.md", 0.60, 2)}
    candidates[("c1", "a.md")].page_support = (None, None)  # b.md's is left at its default
    apply_page_support(candidates, centroid_weight=0.3, second_weight=0.3)
    assert [candidates[key].ranks["semantic"] for key in (("c1", "a.md"), ("c2", "b.md"))] == [1, 2]
    lexical_only = _Candidate(path="c.md", title="c", type="topic", category=None, heading_path="", body="")
    lexical_only.ranks["lexical"], lexical_only.raws["lexical"] = 1, 3.0
    candidates[("c3", "c.md")] = lexical_only
    apply_page_support(candidates, centroid_weight=0.3, second_weight=0.3)
    assert "semantic" not in lexical_only.ranks
