"""Named reads of the corpus, always under the caller's grants.

Every selector starts from ``visible_to(principal, ...)``: what the caller may not see is
indistinguishable from what does not exist (``DoesNotExist`` either way).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import F, Q, QuerySet
from pydantic import BaseModel, ConfigDict

from brain.rows import columns, fetch_one, hydrate
from corpus.models import Figure, Page, PageLink, Revision, Source
from grants.models import Member
from grants.predicates import reaches_sql
from grants.principals import Principal, SystemPrincipal


def page_find(
    *,
    principal: Principal | None,
    prefix: str | None = None,
    words: str | None = None,
    type: str | None = None,
    category: str | None = None,
    limit: int = 50,
) -> QuerySet[Page]:
    """Live pages visible to ``principal``, filtered by path prefix, title words, type, category."""
    pages = Page.objects.visible_to(principal, "read").select_related("owner__user")
    if prefix:
        pages = pages.filter(path__startswith=prefix)
    if type:
        pages = pages.filter(type=type)
    if category:
        pages = pages.filter(category=category)
    # One condition for all the words (a filter a word cloned the query each time: quadratic
    # in the number of words), each distinct word once.
    wanted = {word.casefold(): word for word in (words or "").split()}
    if wanted:
        pages = pages.filter(Q(*(Q(title__icontains=word) for word in wanted.values())))
    return pages.order_by("path")[: max(1, min(limit, 200))]


def page_get_visible(*, principal: Principal | None, path: str, permission: str = "read") -> Page:
    """The live page at ``path`` if ``principal`` holds ``permission``; else ``Page.DoesNotExist``.

    One page by key: the access predicate is checked on that row (``reaches_sql``) rather
    than by computing every page the caller may see.
    """
    if principal is None:
        raise Page.DoesNotExist
    # Hand-written (with its revision, owner and owner's user joined in) because every read
    # tool runs it: the same query through the ORM cost ~1 ms a call to compile.
    predicate, params = ("true", ()) if isinstance(principal, SystemPrincipal) else (
        reaches_sql(principal, permission, table="corpus_page", alias="p")
    )  # fmt: skip
    User = get_user_model()
    sql = f"""SELECT {columns(Page, "p")}, {columns(Revision, "r")}, {columns(Member, "m")}, {columns(User, "u")}
                FROM corpus_page p
                JOIN corpus_revision r ON r.id = p.current_revision_id
                JOIN grants_member m ON m.id = p.owner_id
                JOIN {User._meta.db_table} u ON u.id = m.user_id
               WHERE p.path = %s AND {predicate}"""
    row = fetch_one(sql, (path, *params))
    if row is None:
        raise Page.DoesNotExist("Page matching query does not exist.")
    page, revision, owner, user = hydrate(row, [Page, Revision, Member, User])
    owner.user = user  # type: ignore[attr-defined]
    page.owner = owner  # type: ignore[attr-defined]
    page.current_revision = revision  # type: ignore[attr-defined]
    return page  # type: ignore[return-value]


class PageView(BaseModel):
    """A page as read: its live revision's frontmatter and body (also the MCP/REST ``read_page``
    output schema, which inherits it rather than repeating it)."""

    model_config = ConfigDict(frozen=True)

    path: str
    title: str
    type: str
    owner: str
    status: str
    change_policy: str
    category: str | None
    sensitivity: str
    as_of: str
    sources: list[str]
    related: list[str]
    body: str
    revision_sha256: str
    promoted_by: str | None
    promoted_at: str | None


def frontmatter_as_seen_by(frontmatter: dict[str, Any], viewer: Principal | None) -> dict[str, Any]:
    """``frontmatter`` with the related pages and cited captures ``viewer`` cannot read left out.

    What a reader is shown of a page (``page_read``) or of a draft (the build views): a draft
    carried over from a live page keeps every citation (nothing is lost on promotion), but
    what its author is shown names nothing they could not read on the live page.
    """
    return ReferenceFilter(viewer, [frontmatter]).seen(frontmatter)


def frontmatter_references(frontmatter: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(related page paths, ``capture:`` sources) a frontmatter names, as written."""
    related = [str(item) for item in frontmatter.get("related", []) or []]
    sources = [str(item) for item in frontmatter.get("sources", []) or []]
    return related, sources


def _readable(viewer: Principal | None, model: Any, key: str, path: str, live: str, wanted: set[str]) -> set[str]:
    """Which of ``wanted`` (keys of live rows of ``model``) ``viewer`` may read, in one query.

    The per-row form of the access predicate (``reaches_row_sql``, which the property tests
    hold to the reference) on just those rows. Hand-written because every page read asks it:
    the same through ``visible_to`` compiled the whole set-wise predicate for two citations.
    """
    from grants.predicates import reaches_row_sql

    reach, reach_params = reaches_row_sql(viewer, "read", alias="o")
    sql = f"""SELECT o.key FROM (SELECT {key} AS key, {path} AS path, category, sensitivity
                                   FROM {model._meta.db_table} WHERE {key} = ANY(%s) AND {live}) o
               WHERE {reach}"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [sorted(wanted), *reach_params])
        return {str(row[0]) for row in cursor.fetchall()}


def hidden_references(*, principal: Principal | None, path: str) -> tuple[list[str], list[str]]:
    """(related paths, ``capture:`` sources) the live page at ``path`` names that ``principal``
    cannot read — what ``page_read`` left out for them. Nothing when the page is missing or
    hidden from them (then there is nothing of it they could have read or rewritten)."""
    try:
        page = page_get_visible(principal=principal, path=path)
    except Page.DoesNotExist:
        return [], []
    frontmatter = page.current_revision.frontmatter  # type: ignore[union-attr]  # visible pages are live
    related, sources = frontmatter_references(frontmatter)
    shown_related, shown_sources = frontmatter_references(frontmatter_as_seen_by(frontmatter, principal))
    return [item for item in related if item not in shown_related], [
        item for item in sources if item not in shown_sources
    ]


class ReferenceFilter:
    """``frontmatter_as_seen_by`` for many frontmatters at once: two queries in all.

    Built with every frontmatter it will be asked about; ``seen`` then filters any of them
    without touching the database (a review screen of many drafts stays at a constant
    number of queries).
    """

    def __init__(self, viewer: Principal | None, frontmatters: list[dict[str, Any]]) -> None:
        self.everything = isinstance(viewer, SystemPrincipal)
        paths: set[str] = set()
        keys: set[str] = set()
        for frontmatter in frontmatters:
            related, sources = frontmatter_references(frontmatter)
            paths.update(related)
            keys.update(item.removeprefix("capture:") for item in sources)
        self.pages: set[str] = set()
        self.sources: set[str] = set()
        if self.everything:
            return
        if paths:
            self.pages = _readable(viewer, Page, "path", "path", "current_revision_id IS NOT NULL", paths)
        if keys:
            self.sources = _readable(viewer, Source, "key", "scope_path", "is_live", keys)

    def seen(self, frontmatter: dict[str, Any]) -> dict[str, Any]:
        if self.everything:
            return frontmatter
        shown = dict(frontmatter)
        related, sources = frontmatter_references(frontmatter)
        if related:
            shown["related"] = [item for item in related if item in self.pages]
        if sources:
            shown["sources"] = [item for item in sources if item.removeprefix("capture:") in self.sources]
        return shown


def sha256_as_seen(revision: Revision, shown: dict[str, Any]) -> str:
    """The revision's sha256 as a reader shown the frontmatter ``shown`` may have it: the stored
    one when they see all of it; else the sha256 of what they are shown. The hash of the whole
    text let a reader test guesses of a citation left out for them (offline, key by key)."""
    if shown == revision.frontmatter:
        return revision.sha256
    seen = json.dumps(shown, sort_keys=True, ensure_ascii=False, default=str) + "\n---\n" + revision.body
    return hashlib.sha256(seen.encode("utf-8")).hexdigest()


def page_read(*, principal: Principal | None, path: str) -> PageView:
    """Read the live page at ``path``; ``Page.DoesNotExist`` if missing or not visible.

    ``sources`` and ``related`` list only the captures and pages ``principal`` can read:
    a citation or related page the reader cannot open is left out, exactly as if it did not
    exist (its key or path would tell them it does).
    """
    return page_view_of(page_get_visible(principal=principal, path=path), principal)


def page_view_of(page: Page, principal: Principal | None) -> PageView:
    """The ``PageView`` of a page already read through ``page_get_visible`` by ``principal``."""
    revision: Revision = page.current_revision  # type: ignore[assignment]
    promoted_by = None
    if revision.promoted_by_id is not None:
        promoted_by = revision.promoted_by.username  # type: ignore[union-attr]
    shown = frontmatter_as_seen_by(revision.frontmatter, principal)
    return PageView(
        path=page.path,
        title=page.title,
        type=page.type,
        owner=page.owner.username,
        status=page.status,
        change_policy=page.change_policy,
        category=page.category,
        sensitivity=page.get_sensitivity_display(),
        as_of=page.as_of.isoformat(),
        sources=[str(ref).removeprefix("capture:") for ref in shown.get("sources", [])],
        related=[str(item) for item in shown.get("related", [])],
        body=revision.body,
        revision_sha256=sha256_as_seen(revision, shown),
        promoted_by=promoted_by,
        promoted_at=revision.promoted_at.isoformat() if revision.promoted_at else None,
    )


@dataclass(frozen=True)
class PageLinks:
    """A visible page's relationships as its reader may see them, and the links they cannot follow."""

    links_to: list[dict[str, str]]
    related: list[dict[str, str]]
    linked_from: list[dict[str, str]]
    unavailable: frozenset[str]  # link targets missing or hidden from this reader (never told which)
    linked_from_more: int = 0  # readable pages linking here beyond ``linked_from`` (with a limit)

    def as_dict(self) -> dict[str, list[dict[str, str]]]:
        return {"links_to": self.links_to, "related": self.related, "linked_from": self.linked_from}


def page_links(*, principal: Principal | None, page: Page, linked_from_limit: int | None = None) -> PageLinks:
    """Links out of and into ``page`` (already read through ``page_get_visible``), in one query.

    Only pages ``principal`` may read are named; a link to any other (hidden or missing, the
    same) is reported only in ``unavailable``, which the page's own body already names. With
    ``linked_from_limit``, the first that many pages linking here (by path) and a count of the
    rest: a page every page links to had them all on its web page.
    """
    predicate, params = ("true", ()) if isinstance(principal, SystemPrincipal) else (
        reaches_sql(principal, "read", table="corpus_page", alias="p")
    )  # fmt: skip
    incoming = f"""FROM corpus_page p
               WHERE p.current_revision_id IS NOT NULL AND p.id <> %s AND {predicate}
                 AND EXISTS (SELECT 1 FROM corpus_pagelink l WHERE l.from_page_id = p.id AND l.to_path = %s)"""
    limit = "" if linked_from_limit is None else f"ORDER BY p.path LIMIT {int(linked_from_limit) + 1}"
    sql = f"""(SELECT 'out', l.to_path, p.title, l.kind
                FROM corpus_pagelink l
                LEFT JOIN corpus_page p ON p.path = l.to_path AND p.current_revision_id IS NOT NULL AND {predicate}
               WHERE l.from_page_id = %s)
              UNION ALL
              (SELECT 'in', p.path, p.title, '' {incoming} {limit})
               ORDER BY 1, 2"""
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, page.pk, page.pk, *params, page.path))
        rows = cursor.fetchall()
    links_to: list[dict[str, str]] = []
    related: list[dict[str, str]] = []
    linked_from: list[dict[str, str]] = []
    unavailable: set[str] = set()
    for direction, path, title, kind in rows:
        if direction == "in":
            linked_from.append({"path": path, "title": title})
        elif title is None:
            unavailable.add(path)
        elif kind == PageLink.Kind.RELATED:
            related.append({"path": path, "title": title})
        else:
            links_to.append({"path": path, "title": title})
    more = 0
    if linked_from_limit is not None and len(linked_from) > linked_from_limit:
        linked_from = linked_from[:linked_from_limit]
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) {incoming}", (page.pk, *params, page.path))
            more = int(cursor.fetchone()[0]) - linked_from_limit
    return PageLinks(links_to, related, linked_from, frozenset(unavailable), more)


def page_figures(*, page: Page, principal: Principal | None) -> list[Figure]:
    """The current value of each figure tracked on ``page`` (one row per key).

    ``page`` must come from ``page_get_visible``: a live figure on a page the reader may read
    is one they may read (``FigureQuerySet.visible_to``). The capture a figure cites has its
    own scope: ``source_visible`` says whether this reader may open it (one query).
    """
    shown: list[Figure] = []
    for figure in (
        Figure.objects.filter(page_id=page.pk, is_live=True)
        .select_related("source")
        .order_by("key", "-as_of", "-created_at", "-id")
    ):
        if not shown or shown[-1].key != figure.key:  # the newest value of each key comes first
            shown.append(figure)
    cited = {figure.source_id for figure in shown if figure.source_id is not None}
    openable = set(Source.objects.visible_to(principal, "read").filter(pk__in=cited).values_list("pk", flat=True))
    for figure in shown:  # 12.500000 reads as 12.5, 100.000000 as 100
        figure.display_value = format(figure.value.normalize(), "f")  # type: ignore[attr-defined]
        figure.source_visible = figure.source_id in openable  # type: ignore[attr-defined]
    return shown


def page_relationships(*, principal: Principal | None, path: str) -> dict[str, list[dict[str, Any]]]:
    """Links out of and into a visible page, listing only pages the caller can see.

    Returns ``{"links_to": [...], "linked_from": [...], "related": [...]}`` of
    ``{"path", "title"}``. A link to a hidden or missing page is omitted, not hinted at.
    """
    return page_links(principal=principal, page=page_get_visible(principal=principal, path=path)).as_dict()


def figure_current(*, principal: Principal | None, key: str) -> Figure:
    """The current value of figure ``key`` among records the caller can see."""
    return (
        Figure.objects.visible_to(principal, "read")
        .select_related("page", "source")
        .filter(key=key)
        .order_by("-as_of", "-created_at", "-id")[:1]
        .get()
    )


def figure_history(*, principal: Principal | None, key: str, limit: int = 50) -> QuerySet[Figure]:
    return (
        Figure.objects.visible_to(principal, "read")
        .select_related("page", "source")
        .filter(key=key)
        .order_by("-as_of", "-created_at", "-id")[:limit]
    )


def source_list_visible(
    *,
    principal: Principal | None,
    prefix: str | None = None,
    kind: str | None = None,
    tag: str | None = None,
    limit: int = 50,
) -> QuerySet[Source]:
    """Captures visible to ``principal``, newest first."""
    sources = Source.objects.visible_to(principal, "read")
    if prefix:
        sources = sources.filter(key__startswith=prefix)
    if kind:
        sources = sources.filter(kind=kind)
    if tag:
        sources = sources.filter(tags__contains=[tag.strip().lower()])
    return sources.order_by("-captured_at", "key")[: max(1, min(limit, 200))]


def source_get_visible(*, principal: Principal | None, key: str) -> Source:
    """The capture ``key`` if visible; ``Source.DoesNotExist`` otherwise."""
    return Source.objects.visible_to(principal, "read").get(key=key)


SOURCE_MIN_SIMILARITY = 0.45


def source_search(*, principal: Principal | None, query: str, limit: int = 20) -> list[Source]:
    """Visible captures matching ``query``: full-text over titles and text, fused (RRF) with the
    closest embedded chunks of extracted documents. The predicate is in both queries; a
    semantic hit needs similarity >= ``SOURCE_MIN_SIMILARITY`` so an unrelated question
    finds nothing rather than everything.
    """
    from django.db import connection, transaction
    from django.db.models import ExpressionWrapper, FloatField, Value
    from pgvector.django import CosineDistance

    from brain import embeddings, fusion
    from brain.vector_scan import ScanRule, hnsw_settings_sql
    from brain.vectors import current_model_q
    from corpus.models import SourceChunk
    from corpus.search import query_embedding, search_settings

    limit = max(1, min(limit, 100))
    visible = Source.objects.visible_to(principal, "read")
    search = SearchQuery(query, search_type="websearch", config="english")
    arms: dict[str, list[tuple[int, float]]] = {}
    # Source.search_vector: the title and the text's first LEXICAL_SOURCE_CHARACTERS, indexed.
    arms["lexical"] = list(
        visible.annotate(rank=SearchRank(F("search_vector"), search))
        .filter(search_vector=search)
        .order_by("-rank", "key")
        .values_list("pk", "rank")[:50]
    )
    try:
        embedding: list[float] | None = query_embedding(query)
    except embeddings.EmbeddingError:
        embedding = None
    if embedding is not None:
        # brain.vector_scan's rule, as for pages: few visible captures → exact distances over
        # their chunks; otherwise the HNSW index, walked iteratively until enough pass the filter.
        config = search_settings()
        rule = ScanRule(int(config["EXACT_PAGES"]), float(config["EXACT_FRACTION"]))
        exact = rule.exact_for(visible, "corpus_source")
        distance: Any = CosineDistance("embedding", embedding)
        if exact:
            distance = ExpressionWrapper(distance + Value(0.0), output_field=FloatField())  # keeps the index out
        with transaction.atomic():
            if not exact:
                hnsw_sql, hnsw_params = hnsw_settings_sql(max(int(config["EF_SEARCH"]), 100))
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT {hnsw_sql}", hnsw_params)
            nearest = list(
                SourceChunk.objects.filter(current_model_q(), source__in=visible.values("pk"))
                .annotate(distance=distance)
                .filter(distance__lte=1 - SOURCE_MIN_SIMILARITY)
                .order_by("distance")
                .values_list("source_id", "distance")[:100]
            )
        # A capture is as close as its closest chunk.
        closest = fusion.best_per_group(((pk, 1.0 - float(found)) for pk, found in nearest), lambda pk: pk)
        arms["semantic"] = closest[:50]
    scores = fusion.fuse(arms, method="rrf")
    ordered = sorted(scores, key=lambda pk: (-scores[pk], pk))[:limit]
    sources = {source.pk: source for source in Source.objects.filter(pk__in=ordered)}
    return [sources[pk] for pk in ordered]


def reverify_days(page_type: str) -> int:
    """Days after ``as_of`` that a page of ``page_type`` is due for its owner's re-verification."""
    intervals: dict[str, int] = dict(settings.BRAIN_REVERIFY_DAYS)
    return int(intervals.get(page_type, intervals.get("default", 180)))
