"""What the home page shows a signed-in member: what needs them, in one place.

Composes the apps' own selectors; every list is already restricted to what the member may
see (``visible_to``), so the page names nothing beyond their grants.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from brain.rows import columns, hydrate
from builds.models import Build, Review
from builds.selectors import builds_awaiting_page
from corpus.models import Page, Revision
from corpus.selectors import reverify_days
from corpus.services import document_from_revision
from grants.models import Member
from grants.predicates import effective_permissions, reaches_sql
from memory.models import Memory

RECENT = 8


@dataclass(frozen=True)
class Promoted:
    """A recent approval of a page the member can read."""

    path: str
    title: str
    promoted_at: dt.datetime
    promoted_by: str | None


def _owned_pages_due(member: Member, today: dt.date) -> list[tuple[Page, int]]:
    """Live pages ``member`` owns and may read whose ``as_of`` is past their type's interval,
    most overdue first. Hand-written with the per-row predicate: the home page runs it on
    every visit, and the set-wise form cost more to plan than to run."""
    predicate, params = reaches_sql(member, "read", table="corpus_page", alias="p")
    sql = f"""SELECT {columns(Page, "p")} FROM corpus_page p
               WHERE p.owner_id = %s AND p.current_revision_id IS NOT NULL AND {predicate}
               ORDER BY p.as_of, p.path LIMIT 200"""
    with connection.cursor() as cursor:
        cursor.execute(sql, (member.pk, *params))
        pages = [hydrate(row, [Page])[0] for row in cursor.fetchall()]
    due: list[tuple[Page, int]] = []
    for page in pages:
        overdue = (today - page.as_of).days - reverify_days(page.type)  # type: ignore[attr-defined]
        if overdue >= 0:
            due.append((page, overdue))  # type: ignore[arg-type]
    return due[:RECENT]


def _recent_promotions(member: Member) -> list[Promoted]:
    """The latest approved revisions of live pages ``member`` may read (newest first).

    Walks revisions newest first (``revision_promoted_recent`` index) and stops at ``RECENT``
    readable ones, checking the access predicate per row."""
    predicate, params = reaches_sql(member, "read", table="corpus_page", alias="p")
    sql = f"""SELECT p.path, p.title, r.promoted_at, u.username, r.id
                FROM corpus_revision r
                JOIN corpus_page p ON p.id = r.page_id AND p.current_revision_id IS NOT NULL
                LEFT JOIN grants_member m ON m.id = r.promoted_by_id
                LEFT JOIN auth_user u ON u.id = m.user_id
               WHERE r.promoted_at IS NOT NULL AND {predicate}
               ORDER BY r.promoted_at DESC, r.id DESC LIMIT %s"""
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, RECENT * 3))
        rows = cursor.fetchall()
    # The page is readable now; each approval is listed only if its revision was readable as
    # written (the page history's rule): three approvals made while the page was restricted
    # told a reader that, and when, someone changed what they could not see.
    revisions = {revision.pk: revision for revision in Revision.objects.filter(pk__in=[row[4] for row in rows])}
    objects = []
    for row in rows:
        document = document_from_revision(revisions[row[4]])
        objects.append((document.path, document.category, int(document.sensitivity)))
    held = effective_permissions(member, objects) if objects else []
    readable = [Promoted(*row[:4]) for row, best in zip(rows, held, strict=True) if best is not None]
    return readable[:RECENT]


@dataclass
class Home:
    """The sections of the home page, each ready to render (empty lists say what to do next)."""

    to_review: list[Build] = field(default_factory=list)
    my_builds: Sequence[Build] = field(default_factory=list)
    due: list[tuple[Page, int]] = field(default_factory=list)
    promotions: list[Promoted] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    may_administer: bool = False
    # Their builds rejected (or failed) in the last RETURNED_DAYS, each with ``rejected_by`` and
    # ``rejection_note`` (the newest rejecting review's): the requester hears it here.
    returned: Sequence[Build] = field(default_factory=list)


RETURNED_DAYS = 14
MINE = 100  # of a member's open and sent-back builds read for the page (it shows RECENT of each)


def home_for(member: Member) -> Home:
    """The member's home: builds they may approve (not their own), their open builds and those
    lately rejected or failed (with the reviewer's reason), pages they own
    that are due for re-verification, recent promotions of pages they can read, their recent memories."""
    today = timezone.localdate()
    # The newest few they may approve, weighed newest first until found (not every build awaiting anyone).
    to_review = builds_awaiting_page(principal=member, limit=RECENT, exclude_requester=member, want_more=False).builds
    # Their open builds and those lately sent back, in one query: each with the newest
    # rejecting review's reviewer and reason.
    rejection = Review.objects.filter(build=OuterRef("pk"), decision=Review.Decision.REJECT).order_by("-created_at")
    mine = list(
        Build.objects.filter(
            Q(status__in=[Build.Status.OPEN, Build.Status.AWAITING_REVIEW])
            | Q(
                status__in=[Build.Status.REJECTED, Build.Status.FAILED],
                finished_at__gte=timezone.now() - dt.timedelta(days=RETURNED_DAYS),
            ),
            requester=member,
        )
        .annotate(
            rejected_by=Subquery(rejection.values("reviewer__user__username")[:1]),
            rejection_note=Subquery(rejection.values("note")[:1]),
        )
        .order_by("-created_at")[:MINE]
    )
    my_builds = [build for build in mine if build.status not in Build.TERMINAL][:RECENT]
    returned = sorted(
        (build for build in mine if build.status in Build.TERMINAL),
        key=lambda build: build.finished_at or build.created_at,
        reverse=True,
    )[:RECENT]
    due = [(page, overdue) for page, overdue in _owned_pages_due(member, today)]
    promotions = _recent_promotions(member)
    memories = list(Memory.objects.filter(author=member).order_by("-created_at")[:5])
    return Home(
        to_review=to_review,
        my_builds=my_builds,
        due=due,
        promotions=promotions,
        memories=memories,
        may_administer=member.is_administrator,
        returned=returned,
    )
