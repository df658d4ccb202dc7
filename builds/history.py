"""A page's history: every promoted revision, who approved it, when, through which build, and why.

Lives with builds because a revision's story is the build that carried it. The page is
read through the caller's grants first (a page they cannot read has no history for them),
and a revision written under a scope the reader could not read (say, while the page was
restricted) is left out, exactly as if it did not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Max, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from builds.models import Build, BuildCapture, BuildChange, BuildFigure, Promotion
from builds.review import revision_readable
from builds.selectors import builds_approvable_by
from corpus.models import Page, Revision
from corpus.selectors import ReferenceFilter, page_get_visible, sha256_as_seen
from grants.models import Member
from grants.predicates import effective_permissions
from grants.principals import Principal, SystemPrincipal

EARLIEST = datetime(1, 1, 1, tzinfo=UTC)  # "no page ever left this path": every revision on the row counts
SHORT_HASH = 12  # the sha256 prefix shown for a revision (two revisions may share it: a revert)


@dataclass(frozen=True)
class HistoryEntry:
    revision: Revision
    promoted_by: str
    promoted_at: datetime
    build_id: str | None
    build_title: str | None
    note: str
    build_openable: bool  # whether the reader may open the build's page (else its title is text)

    sha256: str  # as the reader may have it (``corpus.selectors.sha256_as_seen``)

    @property
    def short_hash(self) -> str:
        return self.sha256[:SHORT_HASH]

    @property
    def number(self) -> int:
        """What names the revision in ``?from=&to=``: unique, unlike its hash (a revert repeats it)."""
        return int(self.revision.pk)


def page_history(*, principal: Principal | None, path: str, limit: int = 200) -> tuple[Page, list[HistoryEntry]]:
    """The visible page at ``path`` and its promoted revisions, newest first (``Page.DoesNotExist`` if hidden).

    A page that was moved here keeps its history: the revisions its earlier paths were
    given before each move (``moved_lineage``), each shown by the same rule as the rest —
    only if the reader may read it as it was written (its old path included). A page that
    came to a path another page had left (deleted or moved away) does not inherit that
    page's revisions.
    One query for the revisions with their build and approval note joined in (no N+1).
    """
    page = page_get_visible(principal=principal, path=path)
    carried_by = BuildChange.objects.filter(revision=OuterRef("pk")).order_by("-build__finished_at")
    approval = Promotion.objects.filter(build_id=OuterRef("build_pk"))
    # The row at this path may have held other pages before this one (a page deleted or moved
    # away, then a new one written here): only revisions since the last one left are its own.
    # (Asked inside the one revisions query: the history page's query count does not grow.)
    last_left = _leaving(page.path).order_by().values("path").annotate(at=Max("build__finished_at")).values("at")
    own = Q(page_id=page.pk, promoted_at__gt=Coalesce(Subquery(last_left), Value(EARLIEST)))
    for page_id, since, until in moved_lineage(page):
        span = Q(page_id=page_id, promoted_at__lt=until)
        own |= span & Q(promoted_at__gt=since) if since is not None else span
    revisions = (
        Revision.objects.filter(own, promoted_at__isnull=False)
        .select_related("promoted_by__user")
        .annotate(
            build_pk=Subquery(carried_by.values("build_id")[:1]),
            build_public_id=Subquery(carried_by.values("build__public_id")[:1]),
            build_title=Subquery(carried_by.values("build__title")[:1]),
        )
        .annotate(note=Subquery(approval.values("note")[:1]))
        .order_by("-promoted_at", "-id")[:limit]
    )
    readable: dict[tuple[str, object, object], bool] = {}  # revisions mostly share one scope

    def reads(revision: Revision) -> bool:
        scope = (revision.path, revision.frontmatter.get("category"), revision.frontmatter.get("sensitivity"))
        if scope not in readable:
            readable[scope] = revision_readable(principal, revision)
        return readable[scope]

    shown_revisions = [revision for revision in revisions if reads(revision)]
    carried = {r.build_pk for r in shown_revisions if r.build_pk}  # type: ignore[attr-defined]
    openable = builds_openable_by(principal, carried)
    seen_builds = builds_titles_visible_to(principal, carried, openable=openable)
    references = ReferenceFilter(principal, [revision.frontmatter for revision in shown_revisions])
    entries = [
        HistoryEntry(
            revision=revision,
            sha256=sha256_as_seen(revision, references.seen(revision.frontmatter)),
            promoted_by=revision.promoted_by.username if revision.promoted_by is not None else "the system (import)",
            promoted_at=revision.promoted_at,  # type: ignore[arg-type]
            # A build's title and approval note speak for all its pages: shown only to those
            # who may see the build itself.
            build_id=str(revision.build_public_id) if revision.build_pk in seen_builds else None,  # type: ignore[attr-defined]
            build_title=revision.build_title if revision.build_pk in seen_builds else None,  # type: ignore[attr-defined]
            note=(revision.note or "") if revision.build_pk in seen_builds else "",  # type: ignore[attr-defined]
            build_openable=revision.build_pk in openable,  # type: ignore[attr-defined]
        )
        for revision in shown_revisions
    ]
    return page, entries


MAX_MOVES = 50  # a page moved more often than this shows the history of its last 50 homes


def moved_lineage(page: Page) -> list[tuple[int, datetime | None, datetime]]:
    """The earlier homes of ``page``: (page row id, since, until) — its revisions on that row
    approved after ``since`` (None: from the first) and before ``until``, when it moved out —
    newest move first, following every promoted move back (a few queries a move).

    A promoted move leaves the old revisions on the old path's row, which other pages may
    have used before this one arrived or after it left: only the span this page lived there
    is its own. A span starts after the last time a page left that path (a promoted delete or
    move away) before this page left it, and a move into the path only counts inside that
    span — so neither an earlier occupant's revisions nor its own moves are followed. Each step
    goes back in time, so a page moved away and back again cannot loop.
    """
    lineage: list[tuple[int, datetime | None, datetime]] = []
    path, page_id, until = page.path, page.pk, None
    since: datetime | None = None
    while len(lineage) < MAX_MOVES:
        moves = BuildChange.objects.filter(
            action=BuildChange.Action.MOVE, new_path=path, revision__page_id=page_id,
            revision__promoted_at__isnull=False,
        )  # fmt: skip
        if until is not None:
            moves = moves.filter(revision__promoted_at__lt=until)
        move = moves.select_related("revision").order_by("-revision__promoted_at").first()
        if move is None or move.revision is None or move.revision.promoted_at is None:
            break
        if until is None:  # the page's own path: asked only once a move into it is found
            since = _left_at(path, None)
        if since is not None and move.revision.promoted_at <= since:
            break  # that move brought a page that has since left this path, not this one
        old = Page.objects.filter(path=move.path).only("pk", "path").first()
        if old is None:
            break
        moved_at = move.revision.promoted_at
        since = _left_at(old.path, moved_at)
        lineage.append((old.pk, since, moved_at))
        path, page_id, until = old.path, old.pk, moved_at
    return lineage


def _leaving(path: str) -> QuerySet[BuildChange]:
    """The promoted changes that took a page away from ``path``: deletes and moves away."""
    return BuildChange.objects.filter(
        path=path, action__in=[BuildChange.Action.DELETE, BuildChange.Action.MOVE], build__status=Build.Status.PROMOTED
    )


def _left_at(path: str, before: datetime | None) -> datetime | None:
    """When a page last left ``path`` — a promoted build deleted it or moved it away — before
    ``before`` (None: ever); None if none did."""
    changes = _leaving(path)
    if before is not None:
        changes = changes.filter(build__finished_at__lt=before)
    latest: datetime | None = changes.aggregate(latest=Max("build__finished_at"))["latest"]
    return latest


def builds_openable_by(principal: Principal | None, build_ids: set[int]) -> set[int]:
    """Of ``build_ids``, those ``principal`` may open (``build_get_visible``'s rule: requester,
    participant, or approver of one of its pages), in a constant number of queries."""
    if not build_ids or principal is None:
        return set()
    if isinstance(principal, SystemPrincipal):
        return set(build_ids)
    builds = list(Build.objects.filter(pk__in=build_ids))
    shown: set[int] = set()
    if isinstance(principal, Member):
        shown = {build.pk for build in builds if build.requester_id == principal.pk}
        shown |= set(
            Build.participants.through.objects.filter(build_id__in=build_ids, member_id=principal.pk).values_list(
                "build_id", flat=True
            )
        )
    return shown | builds_approvable_by(principal, [build for build in builds if build.pk not in shown])


def builds_titles_visible_to(
    principal: Principal | None, build_ids: set[int], *, openable: set[int] | None = None
) -> set[int]:
    """Of ``build_ids``, those whose title and note ``principal`` may be shown: builds they may
    open (``builds_openable_by``; pass it as ``openable`` when already known) and builds all
    of whose pages they may read. A constant number of queries however many builds."""
    from corpus.services import document_from_revision

    if not build_ids or principal is None:
        return set()
    if isinstance(principal, SystemPrincipal):
        return set(build_ids)
    shown = set(openable) if openable is not None else builds_openable_by(principal, build_ids)
    rest = set(build_ids) - shown
    if not rest:
        return shown
    changes = list(BuildChange.objects.filter(build_id__in=rest).select_related("revision"))
    # The pages a deletion or a move took out (a move's old path names a page too).
    wanted = {c.path for c in changes if not c.revision or c.action == BuildChange.Action.MOVE}
    retired = {page.path: page for page in Page.objects.filter(path__in=wanted)}
    objects: list[tuple[int, tuple[str, str | None, int]]] = []
    unreadable: set[int] = set()
    for change in changes:
        if change.revision is not None:
            document = document_from_revision(change.revision)
            objects.append((change.build_id, (document.path, document.category, int(document.sensitivity))))
        if change.revision is None or change.action == BuildChange.Action.MOVE:
            if change.path in retired:
                page = retired[change.path]
                objects.append((change.build_id, (page.path, page.category, int(page.sensitivity))))
            else:
                unreadable.add(change.build_id)
    # A build's captures and figures are part of what its title and note describe.
    for recorded in BuildCapture.objects.filter(build_id__in=rest).select_related("source"):
        source = recorded.source
        objects.append((recorded.build_id, (source.scope_path, source.category, int(source.sensitivity))))
    for figure in BuildFigure.objects.filter(build_id__in=rest, figure__isnull=False).select_related("figure__page"):
        page = figure.draft.page  # a pending value's page is one of the build's own changes, weighed above
        objects.append((figure.build_id, (page.path, page.category, int(page.sensitivity))))
    held = effective_permissions(principal, [item for _, item in objects])
    unreadable |= {build_id for (build_id, _), best in zip(objects, held, strict=True) if best is None}
    return shown | (rest - unreadable)


def entry_by_number(entries: list[HistoryEntry], number: str) -> HistoryEntry | None:
    """The entry of revision ``number`` among ``entries`` (the reader's visible history), if any."""
    return next((entry for entry in entries if str(entry.number) == number.strip()), None)
