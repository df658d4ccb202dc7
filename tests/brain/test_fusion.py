"""The one fusion kernel: each method's arithmetic, checked against the formulas by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brain.fusion import best_per_group, fuse


def test_rrf_sums_reciprocal_ranks_and_ignores_weights() -> None:
    arms = {"semantic": [("a", 0.9), ("b", 0.8)], "lexical": [("b", 3.0), ("c", 1.0)]}
    fused = fuse(arms, method="rrf", weights={"semantic": 5.0, "lexical": 0.1})
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)
    weighted = fuse(arms, method="weighted_rrf", weights={"semantic": 2.0, "lexical": 0.5}, rrf_k=10)
    assert weighted["b"] == pytest.approx(2.0 / 12 + 0.5 / 11)


def test_score_and_zscore_normalise_each_arm() -> None:
    arms = {"semantic": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "lexical": [("c", 4.0), ("a", 2.0)]}
    minmax = fuse(arms, method="score")
    assert minmax == pytest.approx({"a": 1.0 + 0.0, "b": 0.5, "c": 0.0 + 1.0})
    z = fuse(arms, method="zscore")
    deviation = math.sqrt(((0.9 - 0.5) ** 2 + 0 + (0.1 - 0.5) ** 2) / 3)
    assert z["a"] == pytest.approx(0.4 / deviation + (-1.0))
    assert z["b"] == pytest.approx(0.0)
    assert fuse({"one": [("x", 3.0)]}, method="score") == {"x": 1.0}  # one value: no spread to divide by


def test_an_unknown_method_is_named() -> None:
    with pytest.raises(ValueError, match="fusion must be one of"):
        fuse({}, method="borda")


@given(st.lists(st.integers(0, 30), unique=True, max_size=20), st.lists(st.integers(0, 30), unique=True, max_size=20))
def test_rrf_is_order_only_and_rewards_agreement(first: list[int], second: list[int]) -> None:
    fused = fuse({"a": [(k, 0.0) for k in first], "b": [(k, 0.0) for k in second]}, method="rrf")
    assert set(fused) == set(first) | set(second)
    for key in set(first) & set(second):  # found by both arms: more than by either alone
        assert fused[key] > 1 / (60 + first.index(key) + 1)
        assert fused[key] > 1 / (60 + second.index(key) + 1)


def test_a_group_votes_once_with_its_best_member() -> None:
    chunks = [("a#1", 0.9), ("b#1", 0.8), ("a#2", 0.7), ("c#1", 0.6), ("b#2", 0.5)]
    assert best_per_group(chunks, lambda key: key.split("#")[0]) == [("a", 0.9), ("b", 0.8), ("c", 0.6)]
