"""What the home page shows a signed-in member: what needs them, in one place.

Composes the apps' own selectors; every list is already restricted to what the member may
see (``visible_to``), so the page names nothing beyond their grants.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from builds.models import Build
from builds.selectors import build_list_awaiting_review
from corpus.models import Page, Revision
from grants.models import Member
from memory.models import Memory

RECENT = 8


def reverify_days(page_type: str) -> int:
    """Days after ``as_of`` that a page of ``page_type`` is due for its owner's re-verification."""
    intervals: dict[str, int] = dict(settings.BRAIN_REVERIFY_DAYS)
    return int(intervals.get(page_type, intervals.get("default", 180)))


@dataclass
class Home:
    """The sections of the home page, each ready to render (empty lists say what to do next)."""

    to_review: list[Build] = field(default_factory=list)
    my_builds: list[Build] = field(default_factory=list)
    due: list[tuple[Page, int]] = field(default_factory=list)
    promotions: list[Revision] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    may_administer: bool = False


def home_for(member: Member) -> Home:
    """The member's home: builds they may approve (not their own), their open builds, pages they own
    that are due for re-verification, recent promotions of pages they can read, their recent memories."""
    today = timezone.localdate()
    to_review = [build for build in build_list_awaiting_review(principal=member) if build.requester_id != member.pk][
        :RECENT
    ]
    my_builds = list(
        Build.objects.filter(requester=member, status__in=[Build.Status.OPEN, Build.Status.AWAITING_REVIEW]).order_by(
            "-created_at"
        )[:RECENT]
    )
    visible = Page.objects.visible_to(member, "read")
    due: list[tuple[Page, int]] = []
    for page in visible.filter(owner=member).order_by("as_of")[:200]:
        overdue = (today - page.as_of).days - reverify_days(page.type)
        if overdue >= 0:
            due.append((page, overdue))
    promotions = list(
        Revision.objects.filter(page__in=visible, promoted_at__isnull=False)
        .select_related("page", "promoted_by__user")
        .defer("body", "frontmatter", "frontmatter_text")  # the list shows titles and who, not content
        .order_by("-promoted_at")[:RECENT]
    )
    memories = list(Memory.objects.filter(author=member).order_by("-created_at")[:5])
    return Home(
        to_review=to_review,
        my_builds=my_builds,
        due=due[:RECENT],
        promotions=promotions,
        memories=memories,
        may_administer=member.is_administrator,
    )
