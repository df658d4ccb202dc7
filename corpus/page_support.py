"""How well a whole page, not just its best chunk, supports a query: the semantic arm's page signal.

The semantic arm finds chunks; a page is then judged by its best chunk alone, so a page with
one paragraph that happens to sit near the question outranks a page about the question. Two
page-level similarities correct that, computed in the search statement for the semantic
arm's candidate pages only (a few dozen) from the vectors already stored:

- **centroid**: the query's cosine similarity to the mean of the page's chunk vectors — what
  the page is about as a whole;
- **second**: the similarity of the page's second-best chunk (its best again when it has
  one chunk) — a page that answers in two places is more likely to answer.

A semantic candidate's score becomes ``similarity + PAGE_CENTROID_WEIGHT × centroid +
PAGE_SECOND_WEIGHT × second`` and the arm is re-ranked by it. Measured on the four judged sets
(``make bench-retrieval``, docs/search.md "Page support"): 0.3 / 0.3 lifted the semantic arm
on every set and the default fusion's mean nDCG@10 from 0.769 to 0.785; the neighbouring
weights (0.2-0.4 × 0.25-0.4) all scored 0.782-0.785. The chunk's own cosine similarity is
kept apart (``_Candidate.similarity``): relevance floors read it, never the boosted score.

A page longer than ``MAX_PAGE_CHUNKS`` chunks is judged by its first ones, so one huge page
cannot make every search that finds it slow. Only pages the caller can already see are read:
the support CTE starts from the rows the candidate query admitted through the access predicate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corpus.search import _Candidate

# Reading a chunk's vector and its distance costs about 1 µs: at most ~40 candidate pages ×
# 250 chunks keeps the worst case near 10 ms; the judged sets' longest page has 17 chunks.
MAX_PAGE_CHUNKS = 250


def page_support_sql(vector: str) -> tuple[str, list[Any]]:
    """The body of a CTE giving (revision_id, centroid, second) for every revision with a
    semantic row in the statement's CTE ``found`` (columns ``arm``, ``revision_id``), and its
    parameters. Chunks without a vector yet are left out of both; a page longer than
    ``MAX_PAGE_CHUNKS`` is judged by its first ``MAX_PAGE_CHUNKS`` chunks."""
    sql = """
        SELECT d.revision_id,
               1 - (avg(d.embedding) <=> %s::vector) AS centroid,
               1 - coalesce((array_agg(d.distance ORDER BY d.distance))[2], min(d.distance)) AS second
          FROM (SELECT r.revision_id, c.embedding, c.embedding <=> %s::vector AS distance
                  FROM (SELECT DISTINCT revision_id FROM found WHERE arm = 'semantic') r
                  CROSS JOIN LATERAL (
                      SELECT rc.chunk_id FROM corpus_revisionchunk rc
                       WHERE rc.revision_id = r.revision_id ORDER BY rc.ordinal LIMIT %s) rc
                  JOIN corpus_chunk c ON c.id = rc.chunk_id
                 WHERE c.embedding IS NOT NULL) d
         GROUP BY d.revision_id"""
    return sql, [vector, vector, MAX_PAGE_CHUNKS]


def apply_page_support(
    candidates: dict[tuple[str, str], _Candidate], *, centroid_weight: float, second_weight: float
) -> None:
    """Add each semantic candidate's page support (``candidate.page_support``: its page's
    centroid and second-best similarities; None adds nothing) to its semantic score and
    re-rank the arm. Ties keep the arm's original order. The cosine similarity the arm found
    stays in ``candidate.similarity``."""
    semantic = [
        (candidate.ranks["semantic"], key) for key, candidate in candidates.items() if "semantic" in candidate.raws
    ]
    if not semantic:
        return
    for _, key in semantic:
        candidate = candidates[key]
        centroid, second = candidate.page_support
        candidate.raws["semantic"] += centroid_weight * (centroid or 0.0) + second_weight * (second or 0.0)
    order = sorted(semantic, key=lambda item: (-candidates[item[1]].raws["semantic"], item[0]))
    for rank, (_, key) in enumerate(order, 1):
        candidates[key].ranks["semantic"] = rank
