"""Recall by meaning: dense and keyword arms fused by reciprocal rank, then re-ranked.

Two stages. Relevance: RRF (k = 60) over the arms orders the candidates, and the
shortlist keeps the best 3 × top_k (at least 10) of those within 0.1 cosine similarity
of the closest match or among the top 3 keyword hits. Priors: within it, score = RRF ×
recency × frequency × importance × tag boost, then diversity re-ranking (MMR, λ = 0.7)
to ``top_k``, then optional graph expansion along links (0–3 hops, × 0.6 a hop), which
adds the linked memories after the direct results.

- recency = floor + (1 − floor)·exp(−age / half-life); floors 0.9 (canonical, importance
  ≥ 4, durable), 0.6 (state, and the default), 0.15 (volatile); half-lives by tag: task 7 d,
  work 90 d, context 180 d, otherwise 30 d;
- frequency = 1 + ln(1 + recall count); importance = 0.8 + 0.4 · importance / 5;
- tag boost = 1 + 0.25 per query word that is one of the memory's tags, at most 1.5.

Time phrases in the query ("yesterday", "last week", "this month", "last 3 days" …)
become date filters. Deprecated memories never come back. If the embedder is down the
keyword arm answers alone and ``degraded`` is set.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, F, FloatField, Q, Value
from django.db.models.expressions import RawSQL
from django.utils import timezone
from pgvector.django import CosineDistance

from brain import embeddings, fusion
from brain.vector_scan import ScanRule, hnsw_settings_sql
from brain.vectors import current_model_q
from corpus.lexical import normalise
from corpus.search import operators_sql, query_embedding, tsquery_sql, without_exclusions
from grants.models import Member
from memory.classify import MemoryInvalid, tag_as_stored
from memory.models import Kind, Memory, MemoryLink, Status, Volatility, Workspace

RRF_K = 60
MAX_QUERY_CHARS = 1000  # as corpus search: a question, not a document
CANDIDATES = 50
MMR_LAMBDA = 0.7
HOP_DECAY = 0.6
SHORTLIST_FACTOR = 3  # re-rank the best 3 x top_k by fused relevance (at least 10)
SHORTLIST_MIN = 10
RELEVANCE_MARGIN = 0.1  # cosine similarity below the closest match still counted relevant
KEYWORD_SURE = 3  # keyword hits ranked this high stay relevant whatever their similarity
HALF_LIVES = (("task", 7.0), ("work", 90.0), ("context", 180.0))
DEFAULT_HALF_LIFE = 30.0


@dataclass
class Recalled:
    memory: Memory
    score: float
    similarity: float | None  # cosine similarity to the query, when the dense arm saw it
    hop: int = 0


@dataclass
class Recall:
    results: list[Recalled] = field(default_factory=list)
    degraded: bool = False
    after: dt.datetime | None = None
    before: dt.datetime | None = None


# --------------------------------------------------------------------------- time phrases

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def time_window(query: str, now: dt.datetime | None = None) -> tuple[str, dt.datetime | None, dt.datetime | None]:
    """(query without its time phrase, after, before) for the first time phrase found."""
    now = now or timezone.now()
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    week_start = today - dt.timedelta(days=today.weekday())
    month_start = today.replace(day=1)
    previous_month_start = (month_start - dt.timedelta(days=1)).replace(day=1)
    phrases: list[tuple[str, Any]] = [
        (r"\btoday\b", lambda m: (today, None)),
        (r"\byesterday\b", lambda m: (today - dt.timedelta(days=1), today)),
        (r"\bthis week\b", lambda m: (week_start, None)),
        (r"\blast week\b", lambda m: (week_start - dt.timedelta(days=7), week_start)),
        (r"\bthis month\b", lambda m: (month_start, None)),
        (r"\blast month\b", lambda m: (previous_month_start, month_start)),
        (
            r"\b(?:in the |over the )?(?:last|past) (\d{1,3}) days?\b",
            lambda m: (today - dt.timedelta(days=int(m.group(1))), None),
        ),
        (r"\bthis year\b", lambda m: (today.replace(month=1, day=1), None)),
    ]
    for pattern, window in phrases:
        match = re.search(pattern, query, re.I)
        if match:
            after, before = window(match)
            rest = (query[: match.start()] + query[match.end() :]).strip(" ,.?")
            return re.sub(r"\s{2,}", " ", rest), after, before  # "today" alone leaves nothing to match
    return query, None, None


# --------------------------------------------------------------------------- scoring


def recency(memory: Memory, now: dt.datetime) -> float:
    if memory.status == Status.CANONICAL or memory.importance >= 4 or memory.volatility == Volatility.DURABLE:
        floor = 0.9
    elif memory.volatility == Volatility.VOLATILE:
        floor = 0.15
    else:
        floor = 0.6
    half_life = next((days for tag, days in HALF_LIVES if tag in memory.tags), DEFAULT_HALF_LIFE)
    age_days = max(0.0, (now - memory.created_at).total_seconds() / 86400)
    return floor + (1 - floor) * math.exp(-age_days / half_life)


def frequency(memory: Memory) -> float:
    return 1 + math.log(1 + memory.recall_count)


def importance_weight(memory: Memory) -> float:
    return 0.8 + 0.4 * memory.importance / 5


def tag_boost(memory: Memory, words: set[str]) -> float:
    return min(1.5, 1 + 0.25 * len(words & set(memory.tags)))


def _shortlist(top_k: int) -> int:
    return max(SHORTLIST_MIN, SHORTLIST_FACTOR * top_k)


def _mmr(items: list[Recalled], vectors: dict[Any, np.ndarray], k: int) -> list[Recalled]:
    """Maximal marginal relevance: relevance against redundancy with what is already chosen."""
    if not items:
        return []
    top = max(item.score for item in items) or 1.0
    chosen: list[Recalled] = []
    pool = list(items)
    while pool and len(chosen) < k:

        def value(item: Recalled) -> float:
            vector = vectors.get(item.memory.pk)
            redundancy = 0.0
            if vector is not None:
                redundancy = max(
                    (float(vector @ vectors[c.memory.pk]) for c in chosen if c.memory.pk in vectors), default=0.0
                )
            return MMR_LAMBDA * (item.score / top) - (1 - MMR_LAMBDA) * redundancy

        best = max(pool, key=value)
        chosen.append(best)
        pool.remove(best)
    return chosen


# --------------------------------------------------------------------------- recall


def memory_recall(
    *,
    actor: Member,
    query: str,
    top_k: int = 5,
    tag: str | None = None,
    after: dt.datetime | None = None,
    before: dt.datetime | None = None,
    kind: str | None = None,
    hops: int = 0,
    workspace: str | None = None,
    count_recall: bool = True,
) -> Recall:
    """The memories ``actor`` can see that best answer ``query`` (see the module docstring)."""
    if not isinstance(query, str) or not query.strip():
        raise MemoryInvalid("query must be non-empty text")
    if len(query) > MAX_QUERY_CHARS:
        raise MemoryInvalid(f"query may be at most {MAX_QUERY_CHARS} characters")
    if not 1 <= int(top_k) <= 20:
        raise MemoryInvalid("topK must be from 1 to 20")
    if not 0 <= int(hops) <= 3:
        raise MemoryInvalid("hops must be from 0 to 3")
    if kind is not None and kind not in Kind.values:
        raise MemoryInvalid('kind must be "episodic" or "semantic"')
    if workspace not in (None, "", *Workspace.values):
        raise MemoryInvalid('workspace must be "personal" or "company"')
    text, phrase_after, phrase_before = time_window(query.strip())
    after = after or phrase_after
    before = before or phrase_before

    base = Memory.objects.visible_to(actor).exclude(status=Status.DEPRECATED)
    if workspace:
        base = base.filter(workspace=workspace)
    if tag:
        base = base.filter(tags__contains=[tag_as_stored(tag)])
    # A memory's time is when it happened (a calendar event, a mail) where known, else when it
    # was captured.
    if after:
        base = base.filter(Q(occurred_at__gte=after) | Q(occurred_at__isnull=True, created_at__gte=after))
    if before:
        base = base.filter(Q(occurred_at__lt=before) | Q(occurred_at__isnull=True, created_at__lt=before))
    if kind:
        base = base.filter(kind=kind)
    # A "quoted phrase" and a -exclusion hold for what meaning finds too, not only for keywords.
    required = operators_sql(text, "search_vector")
    if required is not None:
        base = base.filter(RawSQL(required[0], required[1], output_field=BooleanField()))
    if not _sought(text):
        # Nothing left to match ("today", "-ship", a lone quote): the memories the filters
        # leave, newest first. Ranked by the meaning of "" or "-ship" they were noise shown as
        # matches ("-1% match"), and "today" listed 2 of the 8 memories written today.
        newest = base.select_related("author__user").order_by("-created_at")[: int(top_k)]
        return Recall(
            results=[Recalled(memory=m, score=0.0, similarity=None) for m in newest], after=after, before=before
        )

    response = Recall(after=after, before=before)
    arms: dict[str, list[tuple[Any, float]]] = {}
    similarity: dict[Any, float] = {}
    keyword_rank: dict[Any, int] = {}
    try:
        vector: list[float] | None = query_embedding(text)
    except embeddings.EmbeddingError:
        vector = None
        response.degraded = True
    with transaction.atomic():
        if vector is not None:
            candidates = base.filter(current_model_q())
            # Exact distances while the caller's memories are few enough to scan (a brain's
            # shared layer plus their own): HNSW treats a topic with few memories as a small
            # island in its graph, and at 50k memories even ef_search 400 found the right one
            # for only 4 questions in 36 (bench/memory_recall.py). "+ 0" keeps the planner off
            # the index. Beyond the limit, HNSW with a wide beam and iterative scanning.
            exact = ScanRule(settings.BRAIN_MEMORY_EXACT_LIMIT).exact_for(candidates, "memory_memory")
            distance: Any = CosineDistance("embedding", vector)
            if exact:
                distance = ExpressionWrapper(distance + Value(0.0), output_field=FloatField())
            else:
                hnsw_sql, hnsw_params = hnsw_settings_sql(settings.BRAIN_MEMORY_EF_SEARCH)
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT {hnsw_sql}", hnsw_params)
            dense = (
                candidates.annotate(distance=distance).order_by("distance").values_list("pk", "distance")[:CANDIDATES]
            )
            for pk, distance in dense:
                similarity[pk] = 1.0 - float(distance)
            arms["semantic"] = list(similarity.items())
        tsquery = tsquery_sql(text)
        if tsquery is not None:
            sql, params = tsquery
            keyword = (
                base.filter(RawSQL(f"search_vector @@ {sql}", params, output_field=BooleanField()))
                .annotate(rank=RawSQL(f"ts_rank(search_vector, {sql})", params, output_field=FloatField()))
                .order_by("-rank", "-created_at")
                .values_list("pk", flat=True)[:CANDIDATES]
            )
            arms["lexical"] = [(pk, 0.0) for pk in keyword]
            keyword_rank = {pk: rank for rank, (pk, _) in enumerate(arms["lexical"], start=1)}

    ranks = fusion.fuse(arms, method="rrf", rrf_k=RRF_K)
    if not ranks:
        return response
    # Each result names its author (``author.display_name``): read with the memories, not one by one.
    found = Memory.objects.filter(pk__in=list(ranks)).select_related("author__user")
    memories = {memory.pk: memory for memory in found}
    now = timezone.now()
    words = {word.lower() for word in re.findall(r"[\w:-]+", normalise(text))}
    scored = [
        Recalled(
            memory=memory,
            score=ranks[pk]
            * recency(memory, now)
            * frequency(memory)
            * importance_weight(memory)
            * tag_boost(memory, words),
            similarity=similarity.get(pk),
        )
        for pk, memory in memories.items()
    ]
    # Relevance picks, priors order: only a relevant shortlist is re-ranked, so a frequently
    # recalled or important memory cannot displace the one the question is about (RRF
    # scores of ranks 1–50 differ by under 2x and ignore how close a match is; the priors
    # differ by up to 20x). Relevant: within RELEVANCE_MARGIN of the closest match's
    # similarity, or a top keyword hit (names, codes, exact words).
    best = max(similarity.values(), default=None)

    def relevant(pk: Any) -> bool:
        if best is None:
            return True  # keyword recall alone (the embedder is down)
        if pk in similarity and similarity[pk] >= best - RELEVANCE_MARGIN:
            return True
        return keyword_rank.get(pk, CANDIDATES + 1) <= KEYWORD_SURE

    fused = [pk for pk, _ in sorted(ranks.items(), key=lambda kv: kv[1], reverse=True)]
    shortlist = set([pk for pk in fused if relevant(pk)][: _shortlist(int(top_k))])
    scored = [item for item in scored if item.memory.pk in shortlist]
    scored.sort(key=lambda item: item.score, reverse=True)
    vectors = {
        memory.pk: np.asarray(memory.embedding, dtype=np.float32)
        for memory in memories.values()
        if memory.embedding is not None
    }
    results = _mmr(scored, vectors, int(top_k))
    direct = [item.memory.pk for item in results]
    if hops:
        # top_k direct results plus at most top_k neighbours, the strongest (a hub linked to
        # 3,000 memories answered 3 MB and bumped each one's recall count).
        results = _expand(actor, results, int(hops), base, limit=int(top_k))
    if count_recall and direct:
        # Recalled means found by the question: a neighbour shown beside it is not counted.
        Memory.objects.filter(pk__in=direct).update(recall_count=F("recall_count") + 1, last_recalled_at=timezone.now())
    response.results = results
    return response


def _sought(text: str) -> bool:
    """Whether ``text`` asks for something: a word outside its exclusions (search's reading)."""
    return bool(re.search(r"\w", without_exclusions(text)))


def _expand(actor: Member, results: list[Recalled], hops: int, base: Any, *, limit: int) -> list[Recalled]:
    """Follow links out of the results, hop by hop, scoring neighbours × 0.6 per hop; at most
    ``limit`` neighbours in all (the strongest), each hop reading at most that many."""
    seen = {item.memory.pk: item for item in results}
    direct = set(seen)
    frontier = list(results)
    for hop in range(1, hops + 1):
        ids = [item.memory.pk for item in frontier]
        pairs = list(
            MemoryLink.objects.filter(from_memory__in=ids).values_list("from_memory_id", "to_memory_id")
        ) + list(MemoryLink.objects.filter(to_memory__in=ids).values_list("to_memory_id", "from_memory_id"))
        neighbour_ids = {other for _, other in pairs if other not in seen}
        visible = {memory.pk: memory for memory in base.filter(pk__in=neighbour_ids).select_related("author__user")}
        parent_score = {item.memory.pk: item.score for item in frontier}
        next_frontier = []
        for parent, other in pairs:
            if other in visible and other not in seen:
                item = Recalled(
                    memory=visible[other], score=parent_score[parent] * HOP_DECAY**hop, similarity=None, hop=hop
                )
                seen[other] = item
                next_frontier.append(item)
        # The strongest neighbours go on; the others are dropped, not kept for a later hop.
        next_frontier.sort(key=lambda item: item.score, reverse=True)
        for dropped in next_frontier[limit:]:
            del seen[dropped.memory.pk]
        frontier = next_frontier[:limit]
        if not frontier:
            break
    neighbours = sorted(
        (item for pk, item in seen.items() if pk not in direct), key=lambda item: item.score, reverse=True
    )
    kept = [item for item in seen.values() if item.memory.pk in direct] + neighbours[:limit]
    return sorted(kept, key=lambda item: item.score, reverse=True)


def memory_list_recent(
    *,
    actor: Member,
    n: int = 10,
    tag: str | None = None,
    kind: str | None = None,
    workspace: str | None = None,
    author: str | None = None,
) -> list[Memory]:
    """The most recent memories ``actor`` can see (deprecated included, labelled by status)."""
    if not 1 <= int(n) <= 50:
        raise MemoryInvalid("n must be from 1 to 50")
    if workspace not in (None, "", *Workspace.values):
        raise MemoryInvalid('workspace must be "personal" or "company"')
    if kind not in (None, "", *Kind.values):  # as recall refuses it: a typo is not "no memories"
        raise MemoryInvalid('kind must be "episodic" or "semantic"')
    memories = Memory.objects.visible_to(actor).select_related("author__user")
    if tag:
        memories = memories.filter(tags__contains=[tag_as_stored(tag)])
    if kind:
        memories = memories.filter(kind=kind)
    if workspace:
        memories = memories.filter(workspace=workspace)
    if author:
        memories = memories.filter(author__user__username=author)
    return list(memories.order_by("-created_at")[: int(n)])


def memory_get(*, actor: Member, memory_id: Any) -> Memory:
    """One memory ``actor`` can see; ``Memory.DoesNotExist`` otherwise (hidden = missing)."""
    return Memory.objects.visible_to(actor).select_related("author__user").get_by_id(memory_id)


MAX_CONNECTIONS = 100  # each way; a shared memory can gather thousands of links


def memory_connections(*, actor: Member, memory_id: Any) -> list[tuple[str, str, Memory]]:
    """(direction, type, other memory) for the links of a visible memory whose other end is
    visible: the newest ``MAX_CONNECTIONS`` outgoing, then the newest ``MAX_CONNECTIONS`` incoming."""
    memory = memory_get(actor=actor, memory_id=memory_id)
    visible = Memory.objects.visible_to(actor)
    outgoing = (
        MemoryLink.objects.filter(from_memory=memory, to_memory__in=visible)
        .select_related("to_memory__author__user")
        .order_by("-created_at", "-pk")[:MAX_CONNECTIONS]
    )
    incoming = (
        MemoryLink.objects.filter(to_memory=memory, from_memory__in=visible)
        .select_related("from_memory__author__user")
        .order_by("-created_at", "-pk")[:MAX_CONNECTIONS]
    )
    return [("out", link.type, link.to_memory) for link in outgoing] + [
        ("in", link.type, link.from_memory) for link in incoming
    ]


def memory_stats(member: Member) -> dict[str, Any]:
    """Counts of the memories ``member`` can see: total, by workspace, status and kind, and the
    20 most used tags (the REST APIs' stats, old and v1)."""
    from collections import Counter

    visible = Memory.objects.visible_to(member)
    by = {field: dict(Counter(visible.values_list(field, flat=True))) for field in ("workspace", "status", "kind")}
    tags: Counter[str] = Counter()
    for row in visible.values_list("tags", flat=True):
        tags.update(row)
    return {"total": visible.count(), **by, "top_tags": dict(tags.most_common(20))}
