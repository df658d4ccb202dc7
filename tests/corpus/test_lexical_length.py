"""BRAIN_SEARCH_LEXICAL_LENGTH: the lexical arm weighs less for long questions, more for a keyword."""

from __future__ import annotations

from typing import Any

from corpus.search import _Candidate, _fuse, search_settings


def _candidates() -> dict[tuple[str, str], _Candidate]:
    # "a" is the semantic arm's first and the lexical arm's second; "b" the other way round.
    def candidate(path: str, semantic: int, lexical: int) -> _Candidate:
        return _Candidate(path=path, title=path, type="topic", category=None, heading_path="", body="",
                          ranks={"semantic": semantic, "lexical": lexical},
                          raws={"semantic": 1.0 - semantic / 10, "lexical": 1.0 - lexical / 10})  # fmt: skip

    return {("a", ""): candidate("a", 1, 2), ("b", ""): candidate("b", 2, 1)}


def _first(words: int, **options: Any) -> str:
    config = {**search_settings(), "SEMANTIC_WEIGHT": 1.0, "LEXICAL_WEIGHT": 0.9, **options, "_QUERY_WORDS": words}
    return _fuse(_candidates(), config, "weighted_rrf")[0][1].path


def test_off_by_default_the_weights_decide() -> None:
    assert search_settings()["LEXICAL_LENGTH"] == 0
    assert _first(1) == _first(20) == "a"  # 1 : 0.9, the semantic arm's first wins either way


def test_a_long_question_leans_on_meaning_and_a_keyword_on_words() -> None:
    assert _first(20, LEXICAL_LENGTH=3) == "a"  # 0.9 x 3/20: meaning leads
    assert _first(1, LEXICAL_LENGTH=3, LEXICAL_LENGTH_MAX=2.0) == "b"  # 0.9 x 2: the keyword match leads
    assert _first(1, LEXICAL_LENGTH=3) == "a"  # without the boost, never more than the set weight
