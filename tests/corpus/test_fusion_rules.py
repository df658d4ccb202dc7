"""Corpus search's per-query fusion rules (``corpus.search._fuse``): coverage, length, one vote per page."""

from __future__ import annotations

from typing import Any

from corpus.search import _Candidate, _fuse, content_words, search_settings


def candidate(
    path: str, semantic: int | None, lexical: int | None, coverage: float = 1.0, chunk: str = ""
) -> _Candidate:
    """A chunk at the given rank of each arm (None: not found by it); raw scores fall with rank."""
    ranks = {arm: rank for arm, rank in (("semantic", semantic), ("lexical", lexical)) if rank is not None}
    return _Candidate(path=path, title=path, type="topic", category=None, heading_path=chunk, body="",
                      ranks=ranks, raws={arm: 1.0 - rank / 10 for arm, rank in ranks.items()},
                      coverage=coverage if lexical is not None else None)  # fmt: skip


def ranked(candidates: list[_Candidate], words: int = 1, **options: Any) -> list[str]:
    config = {**search_settings(), **options, "_QUERY_WORDS": words}
    keyed = {(c.path, c.heading_path): c for c in candidates}
    return [
        c.path + (f"#{c.heading_path}" if c.heading_path else "") for _, c in _fuse(keyed, config, config["FUSION"])
    ]


def test_the_shipped_default_is_measured_page_level_score_fusion() -> None:
    config = search_settings()
    assert (config["FUSION"], config["FUSION_LEVEL"], config["LEXICAL_WEIGHT"]) == ("score", "page", 0.3)
    assert (config["COVERAGE_POWER"], config["LEXICAL_LENGTH"], config["LEXICAL_LENGTH_MAX"]) == (1.0, 4, 4.0)


def test_a_keyword_match_leads_a_one_word_query() -> None:
    # "a" is nearest in meaning; "b" holds the one word asked for (weight 0.3 x 4 > 1).
    pages = [candidate("a", 1, None), candidate("b", 3, 1), candidate("c", 2, None)]
    assert ranked(pages, words=1)[0] == "b"
    assert ranked(pages, words=1, LEXICAL_LENGTH=0)[0] == "a"  # without the length rule, 0.3 cannot


def test_a_long_question_leans_on_meaning() -> None:
    pages = [candidate("a", 1, 2), candidate("b", 2, 1)]
    assert ranked(pages, words=12, LEXICAL_WEIGHT=0.9)[0] == "a"  # 0.9 x 4/12: meaning leads
    assert ranked(pages, words=2, LEXICAL_WEIGHT=0.9)[0] == "b"  # 0.9 x 2: the words lead


def test_a_best_match_covering_little_of_the_query_does_not_reorder_meaning() -> None:
    def pages(coverage: float) -> list[_Candidate]:
        others = [candidate(path, rank, None) for rank, path in enumerate("cde", start=3)]
        return [candidate("a", 1, 2, coverage), candidate("b", 2, 1, coverage), *others]

    assert ranked(pages(1.0), words=2)[0] == "b"
    assert ranked(pages(0.2), words=2)[0] == "a"  # 0.3 x 2 x 0.2: two ordinary words shared, no more
    assert ranked(pages(0.2), words=2, COVERAGE_POWER=0)[0] == "b"  # the rule off


def test_each_arm_votes_once_per_page() -> None:
    # "a" fills the semantic arm's first three places; "b" is its fourth and the lexical arm's
    # first. By chunk, b's semantic rank is 4; by page it is 2, and a small lexical vote
    # (reciprocal ranks: 0.03 / 61 > 1/61 - 1/62, but < 1/61 - 1/64) puts it first.
    chunks = [
        candidate("a", 1, None, chunk="one"),
        candidate("a", 2, None, chunk="two"),
        candidate("a", 3, None, chunk="three"),
        candidate("b", 4, 1),
        candidate("c", 5, None),
    ]
    options: dict[str, Any] = {
        "FUSION": "weighted_rrf",
        "LEXICAL_WEIGHT": 0.03,
        "COVERAGE_POWER": 0,
        "LEXICAL_LENGTH": 0,
    }
    assert ranked(chunks, FUSION_LEVEL="chunk", **options)[0] == "a#one"
    by_page = ranked(chunks, FUSION_LEVEL="page", **options)
    assert by_page[0] == "b"
    # A page's further chunks follow its best and never score above it.
    assert by_page.index("a#one") < by_page.index("a#two") < by_page.index("a#three")


def test_content_words() -> None:
    assert content_words("How do I use the API?") == 1  # nothing of four letters: still one
    assert (
        content_words("Why does Python use indentation for grouping statements?") == 5
    )  # does python indentation grouping statements
    assert content_words("报销 流程") == 2  # runs of a script without spaces count whole
