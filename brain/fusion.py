"""Rank fusion, written once: corpus search, capture search and memory recall fuse their arms here.

An *arm* is a ranked list of ``(key, raw score)``, best first (a semantic arm's cosine
similarity, a lexical arm's text rank). ``fuse`` combines arms into one score per key:

- ``rrf``: reciprocal rank fusion, ``Σ 1 / (k + rank)`` (ranks from 1; equal weights);
- ``weighted_rrf``: the same with a weight per arm;
- ``score``: each arm's raw scores min-max normalised to [0, 1], weighted and summed;
- ``zscore``: each arm's raw scores standardised (mean 0, deviation 1), weighted and summed.

A key missing from an arm contributes nothing from it. ``best_per_group`` reduces an arm of
parts (chunks) to an arm of what they belong to (pages, captures), each as good as its best
part, so a group votes once. Which method a caller uses is its own measured choice
(``docs/search.md``); the arithmetic lives only here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
G = TypeVar("G", bound=Hashable)

METHODS = ("rrf", "weighted_rrf", "score", "zscore")
RRF_K = 60


def fuse(
    arms: Mapping[str, Sequence[tuple[K, float]]],
    *,
    method: str = "rrf",
    weights: Mapping[str, float] | None = None,
    rrf_k: float = RRF_K,
) -> dict[K, float]:
    """One fused score per key of any arm (higher is better). ``ValueError`` for an unknown method."""
    if method not in METHODS:
        raise ValueError(f"fusion must be one of {', '.join(METHODS)}")
    weight = {arm: 1.0 if method == "rrf" or weights is None else float(weights.get(arm, 1.0)) for arm in arms}
    fused: dict[K, float] = {}
    for arm, ranked in arms.items():
        if method in ("rrf", "weighted_rrf"):
            contributions = [(key, 1.0 / (rrf_k + rank)) for rank, (key, _) in enumerate(ranked, start=1)]
        else:
            keys = [key for key, _ in ranked]
            contributions = list(zip(keys, _normalised([raw for _, raw in ranked], method), strict=True))
        for key, value in contributions:
            fused[key] = fused.get(key, 0.0) + weight[arm] * value
    return fused


def best_per_group(ranked: Iterable[tuple[K, float]], group_of: Callable[[K], G]) -> list[tuple[G, float]]:
    """An arm (best first) reduced to groups, best first: each group once, with its best member's raw score."""
    best: dict[G, float] = {}
    for key, raw in ranked:
        best.setdefault(group_of(key), raw)
    return list(best.items())


def _normalised(raws: list[float], method: str) -> list[float]:
    if not raws:
        return []
    if method == "score":
        low, high = min(raws), max(raws)
        return [(raw - low) / (high - low) if high > low else 1.0 for raw in raws]
    mean = sum(raws) / len(raws)
    deviation = math.sqrt(sum((raw - mean) ** 2 for raw in raws) / len(raws))
    return [(raw - mean) / deviation if deviation > 0 else 0.0 for raw in raws]
