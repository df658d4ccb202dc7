"""Search results as people read them: one entry per page, above a relevance floor.

The engine returns chunks (at most ``PER_PAGE`` per page); the web page shows each page
once, with its best chunk's snippet and how many more of its passages matched. A chunk
found only by meaning, with a similarity under the floor, is dropped: every query has
nearest neighbours, and "no results" is the honest answer to a nonsense query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from corpus.search import SearchResult


def min_similarity() -> float:
    """``BRAIN_SEARCH["WEB_MIN_SIMILARITY"]`` (0.25 unless configured; measured in brain/settings.py)."""
    return float(settings.BRAIN_SEARCH["WEB_MIN_SIMILARITY"])


def relevant(result: SearchResult, floor: float) -> bool:
    """A lexical match always counts; a result found by meaning alone must reach ``floor``."""
    if result.lexical_rank is not None:
        return True
    return result.semantic_similarity is not None and result.semantic_similarity >= floor


@dataclass
class PageGroup:
    """A page in the results: its best passage and how many more passages matched."""

    best: SearchResult
    more: list[SearchResult] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.best.path

    @property
    def title(self) -> str:
        return self.best.title


def group_by_page(results: list[SearchResult], *, floor: float | None = None) -> list[PageGroup]:
    """``results`` (best first) folded into one group per page, in the order of each page's best."""
    floor = min_similarity() if floor is None else floor
    groups: dict[str, PageGroup] = {}
    for result in results:
        if not relevant(result, floor):
            continue
        if result.path in groups:
            groups[result.path].more.append(result)
        else:
            groups[result.path] = PageGroup(best=result)
    return list(groups.values())
