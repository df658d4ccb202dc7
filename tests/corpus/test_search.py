"""Hybrid search: CJK and full-width keywords, degraded mode, filters, the per-page cap."""

from __future__ import annotations

from unittest import mock

import pytest

from brain import embeddings
from corpus import search as search_module
from corpus.search import SearchError, search
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish


class SearchTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish(
            DISCOUNT_POLICY,
            title="Discount policy",
            category="pricing",
            sensitivity="restricted",
            body="# Discount policy\n\n## Ceiling\n\nAccount managers may approve up to 12% without escalation.\n",
        )
        publish(
            "topics/pricing/price-list.md",
            title="Price list",
            category="pricing",
            body="# Price list\n\n## Plans\n\nThe Team plan is billed per seat.\n\n## Annual\n\nAnnual prepayment is "
            "invoiced in advance.\n\n## Seats\n\nSeats added mid-term are prorated.\n",
        )
        publish(
            "topics/japan/tokyo-office.md",
            title="Tokyo office",
            type="topic",
            body="# 東京オフィス\n\n## 勤務時間\n\n東京オフィスの勤務時間は午前九時から午後六時までです。\n\n"
            "## 製品\n\n弊社のＰｏｓｔｇｒｅＳＱＬ運用ガイドを参照してください。\n",
        )
        publish(
            "topics/china/beijing.md",
            title="Beijing",
            body="# 北京办公室\n\n## 报销\n\n差旅费用报销需要经理批准。\n",
        )
        publish(
            "topics/thai/bangkok.md",
            title="Bangkok",
            body="# Bangkok\n\n## Holidays\n\nวันหยุดประจำปีของสำนักงาน\n",
        )

    def paths(self, principal, query: str, **kwargs) -> list[str]:
        return [r.path for r in search(principal=principal, query=query, **kwargs).results]

    def test_japanese_keyword_recall(self) -> None:
        response = search(principal=self.bob, query="勤務時間", k=3)
        assert response.results[0].path == "topics/japan/tokyo-office.md"
        assert response.results[0].lexical_rank == 1
        assert "<mark>勤務時間</mark>" in response.results[0].snippet_html

    def test_chinese_and_thai_keyword_recall(self) -> None:
        chinese = search(principal=self.bob, query="报销", k=3).results[0]
        assert (chinese.path, chinese.lexical_rank) == ("topics/china/beijing.md", 1)
        thai = search(principal=self.bob, query="วันหยุด", k=3).results[0]
        assert (thai.path, thai.lexical_rank) == ("topics/thai/bangkok.md", 1)

    def test_single_character_query(self) -> None:
        first = search(principal=self.bob, query="京", k=3).results
        assert {r.path for r in first if r.lexical_rank} == {"topics/japan/tokyo-office.md", "topics/china/beijing.md"}

    def test_full_width_text_matches_ordinary_spelling(self) -> None:
        hit = search(principal=self.bob, query="postgresql", k=3).results[0]
        assert hit.path == "topics/japan/tokyo-office.md"
        assert hit.lexical_rank == 1
        hit = search(principal=self.bob, query="ＰＯＳＴＧＲＥＳＱＬ", k=3).results[0]
        assert hit.path == "topics/japan/tokyo-office.md"

    def test_degraded_mode_answers_from_the_lexical_arm(self) -> None:
        search_module.query_vector_cache.clear()

        def down(texts):
            raise embeddings.EmbeddingError("embedding endpoint failed (ConnectionError)")

        with mock.patch.object(embeddings, "embed", side_effect=down):
            response = search(principal=self.bob, query="prepayment invoiced")
        assert response.degraded is True
        assert [r.path for r in response.results] == ["topics/pricing/price-list.md"]
        assert response.results[0].semantic_rank is None

    def test_phrases_and_exclusions_hold_for_what_meaning_finds_too(self) -> None:
        """Quotes and -exclusions are the author's orders to every arm: a chunk the semantic arm
        finds by meaning is dropped when it lacks the phrase or holds an excluded word."""
        everything = search(principal=self.bob, query="seats billing prorated", k=10).results
        assert any(r.semantic_rank and not r.lexical_rank for r in everything)  # meaning alone finds some
        for query, absent in [("seats -prorated", "prorated"), ("plan -plan", "plan"), ("billing -seat", "seat")]:
            results = search(principal=self.bob, query=query, k=10).results
            assert all(absent not in r.body.lower() for r in results), (query, [r.body for r in results])
        phrased = search(principal=self.bob, query='"billed per seat"', k=10).results
        assert [(r.path, r.heading_path) for r in phrased] == [("topics/pricing/price-list.md", "Price list > Plans")]
        # No page holds this phrase: nothing, not the chunk meaning finds closest.
        assert search(principal=self.bob, query='"per seat per month"', k=10).results == []
        # A phrase of stop words alone constrains nothing; a hyphenated word is no exclusion.
        assert search(principal=self.bob, query='seats -"the"', k=3).results
        assert search(principal=self.bob, query="mid-term seats", k=3).results

    def test_operators_hold_beside_a_cjk_word_and_or_keeps_a_phrase_an_alternative(self) -> None:
        """The lexical arm OR-s a CJK run's terms with the rest: "東京オフィス -postgresql" found the
        chunk naming ＰｏｓｔｇｒｅＳＱＬ by its CJK words. And websearch's "or" makes a phrase one
        alternative: '"team plan" or prorated' must not require the phrase of meaning's results."""
        import unicodedata

        def normal(text: str) -> str:
            return unicodedata.normalize("NFKC", text).lower()

        excluded = search(principal=self.bob, query="東京オフィス -postgresql", k=10).results
        assert excluded, "the office's other chunks still match"
        assert all("postgresql" not in normal(r.body) for r in excluded), [r.body for r in excluded]
        phrased = search(principal=self.bob, query='東京オフィス "billed per seat"', k=10).results
        assert all("billed per seat" in r.body for r in phrased), [r.body for r in phrased]
        assert search_module.operators_sql('"team plan" or prorated', "v") is None
        either_but = search_module.operators_sql('"team plan" OR prorated -seat', "v")
        assert either_but is not None
        assert either_but[1] == ["-seat", "-seat"]
        alternatives = search(principal=self.bob, query='"team plan" or prorated', k=10).results
        assert any("prorated" in r.body for r in alternatives)

    def test_filters(self) -> None:
        assert set(self.paths(self.bob, "office", prefix="topics/japan/")) == {"topics/japan/tokyo-office.md"}
        assert set(self.paths(self.bob, "plan", category="pricing")) == {"topics/pricing/price-list.md"}
        assert self.paths(self.bob, "plan", type="process") == []
        with pytest.raises(SearchError, match="prefix"):
            search(principal=self.bob, query="x", prefix="Topics/")
        with pytest.raises(SearchError, match="empty"):
            search(principal=self.bob, query="   ")

    def test_per_page_cap(self) -> None:
        results = search(principal=self.bob, query="seats plans annual prepayment", k=10).results
        assert sum(r.path == "topics/pricing/price-list.md" for r in results) == 2
        results = search(principal=self.bob, query="seats plans annual prepayment", k=10, per_page=3).results
        assert sum(r.path == "topics/pricing/price-list.md" for r in results) == 3

    def test_hidden_pages_never_appear(self) -> None:
        assert DISCOUNT_POLICY not in self.paths(self.bob, "discount escalation approve")
        assert DISCOUNT_POLICY in self.paths(self.alice, "discount escalation approve")
        assert self.paths(self.charlie, "discount") == []
        assert self.paths(None, "discount") == []

    def test_query_vectors_are_cached(self) -> None:
        search_module.query_vector_cache.clear()
        with mock.patch.object(embeddings, "embed", wraps=embeddings.embed) as embed:
            search(principal=self.bob, query="cached query")
            search(principal=self.bob, query="cached query")
        assert embed.call_count == 1

    def test_every_fusion_method_runs(self) -> None:
        for method in ("rrf", "weighted_rrf", "score"):
            results = search(principal=self.bob, query="annual prepayment", fusion=method).results
            assert results[0].path == "topics/pricing/price-list.md"

    def test_vectors_are_stored_in_the_row(self) -> None:
        """Out-of-line (TOASTed) vectors made every exact distance a TOAST fetch."""
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT attrelid::regclass::text, attstorage FROM pg_attribute"
                " WHERE attname = 'embedding' AND attrelid = ANY(%s::regclass[]) ORDER BY 1",
                [["corpus_chunk", "corpus_sourcechunk", "memory_memory"]],
            )
            assert cursor.fetchall() == [("corpus_chunk", "p"), ("corpus_sourcechunk", "p"), ("memory_memory", "p")]

    def test_the_lexical_arm_reports_how_much_of_the_query_each_match_covers(self) -> None:
        def coverage(query: str) -> dict[str, float]:
            visible_sql, visible_params = search_module.visible_revisions_sql(
                self.bob, prefix=None, type=None, category=None
            )
            rows = search_module._candidates(
                visible_sql=visible_sql, visible_params=visible_params, vector=None,
                tsquery=search_module.lexical_query(query), limit=10, ef_search=40,
                exact_pages=1000, exact_fraction=0.1, work_mem="32MB",
            )  # fmt: skip
            return {heading.rsplit(" > ", 1)[-1]: cover for _, _, _, _, cover, _, _, _, _, heading, *_ in rows}

        # Before the first term count every term weighs the same: each section holds half.
        assert coverage("prepayment prorated") == {"Annual": 0.5, "Seats": 0.5}
        assert coverage("prepayment invoiced") == {"Annual": 1.0}


class CandidateGrowthTests(BrainTestCase):
    def test_a_candidate_pool_past_pgvectors_beam_limit_still_searches(self) -> None:
        """The pool grows ×4 up to 4,000 when the best chunks sit on few pages; the HNSW beam
        width followed it past pgvector's 1,000: a DataError, every search a 500."""
        publish("topics/ferries.md", title="Ferries", body="# Ferries\n\nThe ferry timetable changes in May.\n")
        with self.settings(BRAIN_SEARCH={**search_module.search_settings(), "CANDIDATES": 2560, "EXACT_PAGES": 0}):
            response = search(principal=self.bob, query="ferry timetable", k=5)
        assert [result.path for result in response.results][:1] == ["topics/ferries.md"]
