"""Hybrid search over the live corpus, under the caller's own grants.

Two arms run in one SQL statement, each with the access predicate inside its candidate
query (an unauthorised chunk never takes a slot):

- **semantic**: cosine distance on the HNSW index, with pgvector's iterative index scan
  (``hnsw.iterative_scan = strict_order``) so a heavily filtered query still fills its
  candidates instead of returning short;
- **lexical**: Postgres full-text search over the live pages' chunks (``corpus_livechunk``):
  any of the query's rarer terms, scored like BM25 (``lexical_query``; quotes and
  -exclusions keep ``websearch_to_tsquery`` semantics), plus character-bigram terms for
  scripts written without spaces (``corpus.lexical``).

The candidates are fused in Python (a few dozen rows): by default min-max score fusion
with one vote per page and arm, the lexical arm's weight set per query by how much of the
query its best match covers and how long the query is (``_fuse``; RRF, weighted RRF and
z-scores are configurable — see docs/search.md for the measurement behind the default).
At most ``per_page`` chunks per page are returned; if the cap leaves fewer than ``k``
results the candidate pool grows until ``k`` are found or the visible corpus is exhausted.

If the embedder is unavailable the lexical arm answers alone with ``degraded=True``.
"""

from __future__ import annotations

import html
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from brain import embeddings, fusion
from brain.domain import DomainError
from brain.text.paths import PathError, validate_scope_path
from brain.text.secrets import unstorable
from brain.vector_scan import ScanRule, hnsw_settings_sql, table_rows_sql
from corpus import lexical
from corpus.models import Page
from corpus.page_support import apply_page_support, page_support_sql
from corpus.rendering import rendered_text
from grants.predicates import visible_ids_sql
from grants.principals import Principal, SystemPrincipal

logger = logging.getLogger(__name__)

FUSION_METHODS = fusion.METHODS
FUSION_LEVELS = ("page", "chunk")
MAX_CANDIDATES = 4000
MAX_QUERY_CHARACTERS = 1000
MAX_EF_SEARCH = 1000  # hnsw.ef_search's upper bound: 2,560 was a DataError, every search a 500
SNIPPET_CHARS = 240


class SearchError(DomainError, ValueError):
    """Bad search input (empty query, bad filter); the message says what to fix."""


@dataclass(frozen=True)
class SearchResult:
    """One chunk of one live page."""

    path: str
    title: str
    type: str
    category: str | None
    heading_path: str
    snippet: str
    snippet_html: str
    score: float
    semantic_rank: int | None
    lexical_rank: int | None
    body: str = field(default="", repr=False)  # the chunk's text, for answering (not sent to clients)
    # Cosine similarity of the query and the chunk when the semantic arm found it: the web
    # page's relevance floor reads it (a nonsense query still has nearest neighbours).
    semantic_similarity: float | None = field(default=None, repr=False)


@dataclass
class SearchResponse:
    results: list[SearchResult] = field(default_factory=list)
    degraded: bool = False
    fusion: str = "rrf"
    timings_ms: dict[str, float] = field(default_factory=dict)


def search_settings() -> dict[str, Any]:
    """A copy of the ``BRAIN_SEARCH`` setting. brain/settings.py holds every default, each a
    measured choice (docs/search.md); callers may change their copy for one search."""
    return dict(settings.BRAIN_SEARCH)


# --------------------------------------------------------------------------- query vectors


class _LRU:
    """A small thread-safe LRU of query text → vector literal (per process)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> str | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: tuple[str, str], value: str) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


query_vector_cache = _LRU(int(search_settings()["QUERY_CACHE_SIZE"]))


def query_vector(text: str) -> str:
    """The query's embedding as a pgvector literal, cached per process. Raises ``EmbeddingError``."""
    model = embeddings.model_id()
    cached = query_vector_cache.get((model, text))
    if cached is not None:
        return cached
    vector = embeddings.embed([text])[0]
    literal = "[" + ",".join(f"{value:.7g}" for value in vector) + "]"
    query_vector_cache.put((model, text), literal)
    return literal


def query_embedding(text: str) -> list[float]:
    """The query's embedding as floats (for ORM distance expressions), from the same cache."""
    return [float(value) for value in query_vector(text).strip("[]").split(",")]


# --------------------------------------------------------------------------- SQL


def visible_revisions_sql(
    principal: Principal, *, prefix: str | None, type: str | None, category: str | None
) -> tuple[str, tuple[Any, ...]]:
    """SQL selecting the live revision ids of the pages ``principal`` may read, filtered.

    A set (an id may repeat, see ``visible_ids_sql``). Unfiltered, the access predicate
    selects the revisions itself (read from the covering path index); joining its page
    ids back to ``corpus_page`` cost 2-3 ms at 10k visible pages. No ORDER BY anywhere:
    an ordered subquery cannot be hashed (291 → 21 ms at 10k chunks, 5 % visible).
    """
    if not (prefix or type or category) and not isinstance(principal, SystemPrincipal):
        predicate = visible_ids_sql(principal, "read", table="corpus_page", column="current_revision_id")
        assert predicate is not None  # only SYSTEM has no predicate
        sql, params = predicate
        return f"SELECT v.current_revision_id FROM ({sql}) v WHERE v.current_revision_id IS NOT NULL", params
    pages = Page.objects.visible_to(principal, "read")
    if prefix:
        pages = pages.filter(path__startswith=prefix)
    if type:
        pages = pages.filter(type=type)
    if category:
        pages = pages.filter(category=category)
    return pages.order_by().values("current_revision_id").query.sql_with_params()


def tsquery_sql(query: str) -> tuple[str, list[Any]] | None:
    """SQL for the lexical tsquery of ``query`` and its params, or None if it has no terms."""
    parts: list[str] = []
    params: list[Any] = []
    latin = lexical.latin_part(query)
    if re.search(r"\w", latin):
        # All words must match (websearch semantics). Measured on bench/data/pgdocs: an
        # any-word (OR) arm is better alone (nDCG@10 0.611 vs 0.382) but worse fused (0.846
        # vs 0.866) — the strict arm is the precise signal fusion needs. See docs/search.md.
        parts.append("websearch_to_tsquery('english', %s)")
        params.append(latin)
    cjk = lexical.query_terms(query)
    if cjk:
        parts.append("to_tsquery('simple', %s)")
        params.append(" & ".join(cjk))
    if not parts:
        return None
    return "(" + " || ".join(parts) + ")", params


# A query's operators in websearch syntax: a "quoted phrase" (to the end when unclosed), and a
# -term or -"phrase" starting a word ("x-ray" is a word, not an exclusion).
_OPERATOR = re.compile(r'(?<!\S)-?"[^"]*(?:"|$)|(?<!\S)-[^\s"]+')


_OR = re.compile(r"(?<!\S)or(?!\S)", re.IGNORECASE)


def without_exclusions(query: str) -> str:
    """``query`` with its -words and -"phrases" taken out: what it asks for."""
    return _OPERATOR.sub(lambda match: " " if match.group(0).startswith("-") else match.group(0), query)


def has_operators(query: str) -> bool:
    """Whether ``query`` quotes a phrase or excludes a term."""
    return bool(_OPERATOR.search(lexical.latin_part(query)))


def operators_sql(query: str, column: str) -> tuple[str, list[Any]] | None:
    """SQL true for a row whose tsvector ``column`` honours the query's operators — holds each
    "quoted phrase" and none of the -excluded terms — or None when the query has none.

    Every arm's results must pass it, not only the lexical arm's: meaning finds a chunk about
    "discount policy" for ``discount -policy`` too, and a result holding what its author
    excluded reads as wrong. Operators of stop words alone constrain nothing (``-"the"``).
    """
    latin = lexical.latin_part(query)
    found = [match.group(0) for match in _OPERATOR.finditer(latin)]
    if _OR.search(latin):
        # websearch's "or": a phrase is then one alternative ('"team plan" or prorated'), not a
        # requirement; an exclusion still holds for the whole query.
        found = [operator for operator in found if operator.startswith("-")]
    operators = " ".join(found)
    if not operators:
        return None
    constraint = "websearch_to_tsquery('english', %s)"
    return f"(numnode({constraint}) = 0 OR {column} @@ {constraint})", [operators, operators]


@dataclass(frozen=True)
class LexicalQuery:
    """The lexical arm's SQL: ``source`` is a one-row subquery (aliased ``q``) with the tsquery
    ``query`` a chunk must match; ``score`` ranks a matching chunk ``c``."""

    source: str
    params: list[Any]
    score: str
    # The share (0-1) of the query's term weight a matching chunk ``c`` holds: how much of
    # the question the arm's best match speaks to (the fusion's lexical weight reads it).
    coverage: str = "1.0"


LEXICAL_MODES = ("and", "any")
ADAPTIVE_TOP = 10  # with ADAPTIVE: the lexical weight scales with the two arms' shared top pages
ADAPTIVE_FLOOR = 0.2
# Terms in more than this share of chunks only rank, never match: "how", "use", "table"
# would otherwise make half the corpus a candidate of every question.
COMMON_TERM_SHARE = 0.01  # 5 % cost 3x the fused p95 at 100k chunks (docs/search.md)
COMMON_TERM_CHUNKS = 200  # ... and in more chunks than this (a small corpus has no common words)
MAX_TERMS = 12


def lexical_query(query: str, mode: str = "any") -> LexicalQuery | None:
    """The lexical arm for ``query``: None when it has no terms.

    ``and`` (websearch semantics: every word, "phrases", -exclusions) ranked by ``ts_rank``.
    ``any``: a chunk matches any rare-enough query term and is scored like BM25 — each term's
    inverse document frequency times its saturating, length-normalised frequency in the chunk
    (``ts_rank`` of that term) — so covering more and rarer terms ranks higher, and a chunk
    holding every rare term counts double (an AND inside the OR); the terms and weights come
    from ``brain_lexical_query`` (migration corpus 0016) in the same statement.
    A query with quotes or a -exclusion keeps the ``and`` semantics its author asked for, and
    so does one with CJK runs (their bigrams must all match).
    """
    strict = tsquery_sql(query)
    if strict is None:
        return None
    if mode == "and" or has_operators(query) or lexical.query_terms(query):
        sql, params = strict
        return LexicalQuery(f"(SELECT {sql} AS query)", params, "ts_rank(c.search_vector, q.query, 1)")
    latin = lexical.latin_part(query)
    return LexicalQuery(
        "(SELECT m.match AS query, m.every, m.terms, m.weights FROM brain_lexical_query(%s, %s, %s, %s) m)",
        [latin, COMMON_TERM_SHARE, COMMON_TERM_CHUNKS, MAX_TERMS],
        "(SELECT sum(w.weight * ts_rank(c.search_vector, w.term, 1))"
        " FROM unnest(q.terms, q.weights) AS w(term, weight))"
        " * CASE WHEN c.search_vector @@ q.every THEN 2 ELSE 1 END",
        "(SELECT sum(w.weight) FILTER (WHERE c.search_vector @@ w.term) / NULLIF(sum(w.weight), 0)"
        " FROM unnest(q.terms, q.weights) AS w(term, weight))",
    )


# SQL: the revision is the live revision of a page the caller may see (see ``_candidates``).
_VISIBLE_REVISION = "({revision} IN (SELECT vis.current_revision_id FROM vis)) IS TRUE"


def _candidates(
    *,
    visible_sql: str,
    visible_params: tuple[Any, ...],
    vector: str | None,
    tsquery: LexicalQuery | None,
    limit: int,
    ef_search: int,
    exact_pages: int,
    exact_fraction: float,
    work_mem: str,
    page_support: bool = False,
    operators_of: str = "",
) -> list[tuple[Any, ...]]:
    """Both arms in one statement: (arm, chunk id, raw score, rank, coverage, page fields,
    chunk text, page centroid similarity, page second-best similarity).

    With ``page_support`` (and a vector), the last two are each semantic candidate page's
    similarity to the query as a whole (``corpus.page_support``); otherwise NULL. Every
    candidate of both arms honours the operators of the query ``operators_of``
    (``operators_sql``), inside each arm's LIMIT so a filtered arm still fills: the lexical
    arm's own query does not hold them when it matches a CJK run (its terms are OR-ed in)."""
    # The caller's visible pages are computed once (MATERIALIZED, just their live revision
    # ids). Every candidate chunk is then checked, and later mapped to its page, by a
    # per-row lookup that the planner cannot turn into a join:
    # - "(… IN (SELECT … FROM vis)) IS TRUE" becomes a hashed SubPlan, built once per
    #   statement. As a plain IN it became a semi-join that re-scanned vis for every HNSW
    #   candidate (100k chunks: 87 candidates x 0.33 ms = 28 ms of a 45 ms query).
    # - the check is a scalar subquery, not EXISTS, and the page lookup a LATERAL with
    #   OFFSET 0: PostgreSQL charges the hashed SubPlan's start-up cost on every loop of a
    #   nested loop, so as joins it hashed all of corpus_revisionchunk (15-20 ms at 100k
    #   chunks) to look up a dozen candidates (~3 µs each by index).
    live = (
        "(SELECT true FROM corpus_revisionchunk rc WHERE rc.chunk_id = c.id AND "
        f"{_VISIBLE_REVISION.format(revision='rc.revision_id')} LIMIT 1)"
    )
    arms: list[str] = []
    params: list[Any] = []
    required = operators_sql(operators_of, "c.search_vector")
    required_sql, required_params = (f"AND {required[0]}", required[1]) if required is not None else ("", [])
    lexical_required = operators_sql(operators_of, "lc.search_vector")
    lexical_required_sql, lexical_required_params = (
        (f"AND {lexical_required[0]}", lexical_required[1]) if lexical_required is not None else ("", [])
    )
    # Window functions run before LIMIT, so ranks are numbered outside the limited inner
    # query; otherwise every visible row would be scored and sorted.
    if vector is not None:
        # Two plans, one chosen at execution by a one-time filter on the visible pages: few
        # of them (at most EXACT_PAGES and at most EXACT_FRACTION of the corpus) → an exact
        # scan of just their chunks, cheaper than walking the HNSW graph past thousands of
        # hidden neighbours; otherwise the HNSW index with iterative scanning. "+ 0" keeps
        # the planner off the HNSW index in the exact branch, and "= ANY(ARRAY(...))" makes
        # it fetch just the visible chunks by primary key instead of scanning them all (the
        # LATERAL ... OFFSET 0 lists them by revision through the index, where a join
        # hashed all of corpus_revisionchunk: 10 ms at 100k chunks).
        arms.append(
            f"""(SELECT 'semantic' AS arm, s.chunk_id, 1 - s.distance AS raw,
                   row_number() OVER (ORDER BY s.distance, s.chunk_id) AS rank, NULL::float8 AS coverage
              FROM (SELECT c.id AS chunk_id, c.embedding <=> %s::vector AS distance
                      FROM corpus_chunk c
                     WHERE (SELECT exact FROM vis_count) AND c.embedding IS NOT NULL
                       AND c.id = ANY(ARRAY(
                           SELECT rc.chunk_id FROM vis, LATERAL (
                               SELECT rc.chunk_id FROM corpus_revisionchunk rc
                                WHERE rc.revision_id = vis.current_revision_id OFFSET 0) rc))
                       {required_sql}
                     ORDER BY (c.embedding <=> %s::vector) + 0 LIMIT %s) s)"""
        )
        params += [vector, *required_params, vector, limit]
        arms.append(
            f"""(SELECT 'semantic' AS arm, s.chunk_id, 1 - s.distance AS raw,
                   row_number() OVER (ORDER BY s.distance, s.chunk_id) AS rank, NULL::float8 AS coverage
              FROM (SELECT c.id AS chunk_id, c.embedding <=> %s::vector AS distance
                      FROM corpus_chunk c
                     WHERE NOT (SELECT exact FROM vis_count) AND c.embedding IS NOT NULL AND {live}
                       {required_sql}
                     ORDER BY c.embedding <=> %s::vector LIMIT %s) s)"""
        )
        params += [vector, *required_params, vector, limit]
    if tsquery is not None:
        # Two stages: the matching chunks of live pages by plain ts_rank (one call a row),
        # then the best few hundred rescored by the arm's own score (one ts_rank per query
        # term). Both read the query's terms from "lex", computed once per statement. The
        # matches come from corpus_livechunk, whose rows carry their revision: visibility is
        # a lookup in the hashed visible set, with no probe per match (a query of common
        # words matches hundreds). A chunk live on two pages is one candidate (DISTINCT ON).
        arms.append(
            f"""(SELECT 'lexical' AS arm, l.chunk_id, l.score AS raw,
                   row_number() OVER (ORDER BY l.score DESC, l.chunk_id) AS rank, l.coverage
              FROM (SELECT c.chunk_id, {tsquery.score} AS score, {tsquery.coverage}::float8 AS coverage
                      FROM (SELECT DISTINCT ON (m.chunk_id) m.chunk_id, m.search_vector
                              FROM (SELECT lc.chunk_id, lc.search_vector
                                      FROM corpus_livechunk lc, lex q
                                     WHERE lc.search_vector @@ q.query
                                       AND {_VISIBLE_REVISION.format(revision="lc.revision_id")}
                                       {lexical_required_sql}
                                     ORDER BY ts_rank(lc.search_vector, q.query, 1) DESC, lc.chunk_id
                                     LIMIT %s) m
                             ORDER BY m.chunk_id) c,
                           lex q
                     ORDER BY score DESC, c.chunk_id LIMIT %s) l)"""
        )
        params += [*lexical_required_params, max(limit * 5, 200), limit]
    if not arms:
        return []
    exact_sql, exact_params = ScanRule(exact_pages, exact_fraction).sql(
        "SELECT count(*) FROM vis", table_rows_sql("corpus_page")
    )
    support_sql, support_params = page_support_sql(vector) if page_support and vector is not None else ("", [])
    sql = f"""
        WITH vis AS MATERIALIZED ({visible_sql}),
             vis_count AS (
                 -- brain.vector_scan's rule. vis may list a page twice (two grants reach
                 -- it): the count only picks the faster plan, and an over-count picks the
                 -- HNSW one, which is always correct.
                 SELECT {exact_sql} AS exact),
             {f"lex AS MATERIALIZED ({tsquery.source})," if tsquery is not None else ""}
             candidates AS ({" UNION ALL ".join(arms)}),
             found AS MATERIALIZED (
                 SELECT cand.arm, cand.chunk_id, cand.raw, cand.rank, cand.coverage, live.revision_id
                   FROM candidates cand
                   JOIN LATERAL (SELECT rc.revision_id FROM corpus_revisionchunk rc
                                  WHERE rc.chunk_id = cand.chunk_id
                                    AND {_VISIBLE_REVISION.format(revision="rc.revision_id")}
                                 OFFSET 0) live ON true)
             {f", support AS ({support_sql})" if support_sql else ""}
        SELECT f.arm, f.chunk_id, f.raw, f.rank, f.coverage,
               p.path, p.title, p.type, p.category, c.heading_path, c.body,
               {"s.centroid, s.second" if support_sql else "NULL::float8, NULL::float8"}
          FROM found f
          JOIN corpus_chunk c ON c.id = f.chunk_id
          JOIN corpus_page p ON p.current_revision_id = f.revision_id
          {"LEFT JOIN support s ON s.revision_id = f.revision_id" if support_sql else ""}
    """
    lex_params = tsquery.params if tsquery is not None else []
    params = [*visible_params, *exact_params, *lex_params, *params, *support_params]
    with transaction.atomic(), connection.cursor() as cursor:
        # For this transaction only, in one round trip:
        # - the HNSW walk's settings (brain.vector_scan: iterative scanning, the beam);
        # - work_mem large enough that the visible-revision set is always hashed (the
        #   planner falls back to a linear scan per candidate when it would not fit);
        # - no JIT: compiling costs more than this query ever runs.
        hnsw_sql, hnsw_params = hnsw_settings_sql(ef_search)
        cursor.execute(
            f"SELECT {hnsw_sql}, set_config('work_mem', %s, true), set_config('jit', 'off', true)",
            [*hnsw_params, work_mem],
        )
        cursor.execute(sql, params)
        return list(cursor.fetchall())


# --------------------------------------------------------------------------- fusion


@dataclass
class _Candidate:
    path: str
    title: str
    type: str
    category: str | None
    heading_path: str
    body: str
    ranks: dict[str, int] = field(default_factory=dict)
    raws: dict[str, float] = field(default_factory=dict)
    coverage: float | None = None  # the lexical arm's share of the query's term weight
    similarity: float | None = None  # the semantic arm's cosine similarity (raws may add page support)
    page_support: tuple[float | None, float | None] = (None, None)  # its page's centroid, second-best


def _fuse(
    candidates: dict[tuple[str, str], _Candidate], config: dict[str, Any], method: str
) -> list[tuple[float, _Candidate]]:
    """The candidates, best first, each with its fused score.

    The lexical arm's weight is adjusted per query before fusing (docs/search.md, "Fusion"):
    - by coverage (``COVERAGE_POWER``): times the share of the query's term weight its best
      match holds, to that power — a long question whose best lexical match shares two
      ordinary words with it should not reorder what meaning found;
    - by length (``LEXICAL_LENGTH``): times N / the query's content words, at most
      ``LEXICAL_LENGTH_MAX`` — a keyword or two is the lexical arm's strongest case;
    - by agreement (``ADAPTIVE``, off by default): times the arms' shared top pages.
    With ``FUSION_LEVEL = page`` each arm votes once per page (its best chunk there), so a
    page is not pushed down an arm by its own other chunks; a page's best chunk carries the
    page's score and its further chunks their own, never more.
    """
    arms: dict[str, list[tuple[tuple[str, str], float]]] = {}
    for arm in ("semantic", "lexical"):
        by_rank = sorted((c.ranks[arm], key) for key, c in candidates.items() if arm in c.ranks)
        if by_rank:
            arms[arm] = [(key, candidates[key].raws[arm]) for _, key in by_rank]
    weights = _arm_weights(arms, candidates, config)
    rrf_k = float(config["RRF_K"])
    fused = fusion.fuse(arms, method=method, weights=weights, rrf_k=rrf_k)
    if config.get("FUSION_LEVEL", "chunk") == "page":
        page_arms = {
            arm: fusion.best_per_group(ranked, lambda key: candidates[key].path) for arm, ranked in arms.items()
        }
        page_score = fusion.fuse(page_arms, method=method, weights=weights, rrf_k=rrf_k)
        seen: set[str] = set()
        for key in sorted(fused, key=lambda key: -fused[key]):
            path = candidates[key].path
            fused[key] = page_score[path] if path not in seen else min(page_score[path], fused[key])
            seen.add(path)
    scored = [(score, candidates[key]) for key, score in fused.items()]
    scored.sort(key=lambda item: (-item[0], item[1].path, item[1].heading_path))
    return scored


def _arm_weights(
    arms: dict[str, list[tuple[tuple[str, str], float]]],
    candidates: dict[tuple[str, str], _Candidate],
    config: dict[str, Any],
) -> dict[str, float]:
    """Each arm's weight for this query (see ``_fuse``)."""
    weights = {"semantic": float(config["SEMANTIC_WEIGHT"]), "lexical": float(config["LEXICAL_WEIGHT"])}
    if "lexical" not in arms:
        return weights
    power = float(config.get("COVERAGE_POWER") or 0)
    if power > 0:
        best = candidates[arms["lexical"][0][0]].coverage
        weights["lexical"] *= (best if best is not None else 1.0) ** power
    if config.get("ADAPTIVE") and "semantic" in arms:
        # The arms' agreement decides how much the lexical arm may reorder: when its best
        # pages are not among the semantic arm's, its matches are mostly shared ordinary
        # words (long questions), and meaning should lead (docs/search.md).
        top = {arm: {candidates[key].path for key, _ in ranked[:ADAPTIVE_TOP]} for arm, ranked in arms.items()}
        agreement = len(top["semantic"] & top["lexical"]) / ADAPTIVE_TOP
        weights["lexical"] *= max(ADAPTIVE_FLOOR, min(1.0, agreement * 2))
    if int(config.get("LEXICAL_LENGTH") or 0) > 0 and config.get("_QUERY_WORDS"):
        factor = int(config["LEXICAL_LENGTH"]) / int(config["_QUERY_WORDS"])
        weights["lexical"] *= min(float(config.get("LEXICAL_LENGTH_MAX") or 1.0), factor)
    return weights


def content_words(query: str) -> int:
    """How many content words ``query`` has, at least 1: Latin words of four letters or more
    (shorter ones are mostly "how", "the", "use") and every run of a script without spaces."""
    runs = set(lexical.runs(query))
    return max(1, len({word for word in _query_words(query) if len(word) >= 4 or word in runs}))


# --------------------------------------------------------------------------- snippets


def _query_words(query: str) -> list[str]:
    words = [w for w in re.findall(r"\w+", lexical.latin_part(query).lower()) if len(w) > 1]
    return words + lexical.runs(query)


_SNIPPET_PATH = "snippet.md"  # links are not followed in a snippet; any page path resolves them


def snippet(body: str, query: str) -> tuple[str, str]:
    """A window of ``body`` around the first query term, as text and as escaped HTML with <mark>.

    The window is cut from the chunk as a reader sees it rendered (no Markdown syntax).
    """
    text = re.sub(r"\s+", " ", lexical.normalise(rendered_text(body, page_path=_SNIPPET_PATH))).strip()
    terms = sorted(set(_query_words(query)), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE) if terms else None
    start = 0
    if pattern is not None:
        first = pattern.search(text)
        if first is not None:
            start = max(0, first.start() - SNIPPET_CHARS // 3)
    window = text[start : start + SNIPPET_CHARS]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + SNIPPET_CHARS < len(text) else ""
    plain = f"{prefix}{window}{suffix}"
    if pattern is None:
        return plain, html.escape(plain)
    pieces: list[str] = []
    cursor = 0
    for match in pattern.finditer(window):
        pieces.append(html.escape(window[cursor : match.start()]))
        pieces.append(f"<mark>{html.escape(match.group(0))}</mark>")
        cursor = match.end()
    pieces.append(html.escape(window[cursor:]))
    return plain, html.escape(prefix) + "".join(pieces) + html.escape(suffix)


# --------------------------------------------------------------------------- entry point


def search(
    *,
    principal: Principal | None,
    query: str,
    k: int = 10,
    prefix: str | None = None,
    type: str | None = None,
    category: str | None = None,
    per_page: int | None = None,
    fusion: str | None = None,
    weights: tuple[float, float] | None = None,
    arms: tuple[str, ...] = ("semantic", "lexical"),
    lexical_mode: str | None = None,
    adaptive: bool | None = None,
    lexical_length: int | None = None,
    lexical_length_max: float | None = None,
    coverage_power: float | None = None,
    fusion_level: str | None = None,
    page_support: tuple[float, float] | None = None,
) -> SearchResponse:
    """Search the live corpus as ``principal`` sees it.

    ``fusion``/``weights`` (semantic, lexical) and the per-query rules (``adaptive``,
    ``lexical_length``/``_max``, ``coverage_power``, ``fusion_level``, ``page_support`` — the
    page centroid and second-chunk weights) override the configured
    fusion; ``arms`` restricts the search to one arm (the evaluation harness measures each
    arm and rule alone).

    Raises ``SearchError`` for an empty query or a malformed filter. Never raises for an
    unavailable embedder: the lexical arm answers alone and ``degraded`` is set.
    """
    config = search_settings()
    if weights is not None:
        config["SEMANTIC_WEIGHT"], config["LEXICAL_WEIGHT"] = weights
    if adaptive is not None:
        config["ADAPTIVE"] = adaptive
    if lexical_length is not None:
        config["LEXICAL_LENGTH"] = lexical_length
    if lexical_length_max is not None:
        config["LEXICAL_LENGTH_MAX"] = lexical_length_max
    if coverage_power is not None:
        config["COVERAGE_POWER"] = coverage_power
    if fusion_level is not None:
        config["FUSION_LEVEL"] = fusion_level
    if page_support is not None:
        config["PAGE_CENTROID_WEIGHT"], config["PAGE_SECOND_WEIGHT"] = page_support
    centroid_weight, second_weight = float(config["PAGE_CENTROID_WEIGHT"]), float(config["PAGE_SECOND_WEIGHT"])
    if centroid_weight < 0 or second_weight < 0:
        raise SearchError("page support weights must not be negative")
    support = centroid_weight > 0 or second_weight > 0
    if config.get("FUSION_LEVEL", "chunk") not in FUSION_LEVELS:
        raise SearchError(f"fusion level must be one of {', '.join(FUSION_LEVELS)}")
    if not arms or set(arms) - {"semantic", "lexical"}:
        raise SearchError("arms must be 'semantic' and/or 'lexical'")
    method = fusion or str(config["FUSION"])
    if method not in FUSION_METHODS:
        raise SearchError(f"fusion must be one of {', '.join(FUSION_METHODS)}")
    query = (query or "").strip()
    if not query:
        raise SearchError("query must not be empty")
    if len(query) > MAX_QUERY_CHARACTERS:
        raise SearchError(f"query must be at most {MAX_QUERY_CHARACTERS:,} characters")
    cannot = unstorable(query)
    if cannot is not None:  # PostgreSQL takes no NUL in text: a database error (500) otherwise
        raise SearchError(f"query must not contain {cannot}")
    if int(config.get("LEXICAL_LENGTH") or 0) > 0:
        config["_QUERY_WORDS"] = content_words(query)
    if not 1 <= k <= 100:
        raise SearchError("k must be between 1 and 100")
    cap = int(per_page if per_page is not None else config["PER_PAGE"])
    if cap < 1:
        raise SearchError("per_page must be at least 1")
    if prefix:
        try:
            validate_scope_path(prefix)
        except PathError as exc:
            raise SearchError(f"prefix: {exc.message}") from None

    response = SearchResponse(fusion=method)
    if principal is None:
        return response
    visible_sql, visible_params = visible_revisions_sql(principal, prefix=prefix, type=type, category=category)

    started = time.perf_counter()
    vector: str | None = None
    if "semantic" in arms:
        try:
            vector = query_vector(query)
        except embeddings.EmbeddingError:
            logger.warning("search degraded: the embedder is unavailable")
            response.degraded = True
    response.timings_ms["embed"] = (time.perf_counter() - started) * 1000
    lexical_mode = lexical_mode or str(config["LEXICAL"])
    if lexical_mode not in LEXICAL_MODES:
        raise SearchError(f"lexical must be one of {', '.join(LEXICAL_MODES)}")
    tsquery = lexical_query(query, lexical_mode) if "lexical" in arms else None

    limit = max(int(config["CANDIDATES"]), k * cap * 2)
    while True:
        started = time.perf_counter()
        rows = _candidates(
            visible_sql=visible_sql,
            visible_params=visible_params,
            vector=vector,
            tsquery=tsquery,
            limit=limit,
            # pgvector's range is 1..1000; past it the iterative scan goes on filling the LIMIT.
            ef_search=min(max(int(config["EF_SEARCH"]), limit), MAX_EF_SEARCH),
            exact_pages=int(config["EXACT_PAGES"]),
            exact_fraction=float(config["EXACT_FRACTION"]),
            work_mem=f"{int(config['WORK_MEM_MB'])}MB",
            page_support=support,
            operators_of=query,
        )
        response.timings_ms["database"] = (time.perf_counter() - started) * 1000
        candidates: dict[tuple[str, str], _Candidate] = {}
        arm_counts = {"semantic": 0, "lexical": 0}
        seen_rows: set[tuple[str, str]] = set()
        for (arm, chunk_id, raw, rank, coverage, path, title, page_type, page_category, heading_path, body,
             centroid, second) in rows:  # fmt: skip
            if (arm, chunk_id) not in seen_rows:
                seen_rows.add((arm, chunk_id))
                arm_counts[arm] += 1
            candidate = candidates.setdefault(
                (chunk_id, path),
                _Candidate(path, title, page_type, page_category, heading_path, body),
            )
            candidate.ranks[arm] = int(rank)
            candidate.raws[arm] = float(raw)
            if arm == "semantic":
                candidate.similarity = float(raw)
                candidate.page_support = centroid, second
            if coverage is not None:
                candidate.coverage = float(coverage)
        if support:
            apply_page_support(candidates, centroid_weight=centroid_weight, second_weight=second_weight)
        fused = _fuse(candidates, config, method)
        results: list[tuple[float, _Candidate]] = []
        per_page_count: dict[str, int] = {}
        for score, candidate in fused:
            if per_page_count.get(candidate.path, 0) >= cap:
                continue
            per_page_count[candidate.path] = per_page_count.get(candidate.path, 0) + 1
            results.append((score, candidate))
            if len(results) == k:
                break
        arms_full = any(count >= limit for count in arm_counts.values())
        if len(results) >= k or not arms_full or limit >= MAX_CANDIDATES:
            break
        limit = min(limit * 4, MAX_CANDIDATES)

    for score, candidate in results:
        plain, marked = snippet(candidate.body, query)
        response.results.append(
            SearchResult(
                path=candidate.path,
                title=candidate.title,
                type=candidate.type,
                category=candidate.category,
                heading_path=candidate.heading_path,
                snippet=plain,
                snippet_html=marked,
                score=round(score, 6),
                semantic_rank=candidate.ranks.get("semantic"),
                lexical_rank=candidate.ranks.get("lexical"),
                body=candidate.body,
                semantic_similarity=candidate.similarity,
            )
        )
    return response
