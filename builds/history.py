"""A page's history: every promoted revision, who approved it, when, through which build, and why.

Lives with builds because a revision's story is the build that carried it. The page is
read through the caller's grants first (a page they cannot read has no history for them),
and a revision written under a scope the reader could not read (say, while the page was
restricted) is left out, exactly as if it did not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import OuterRef, Subquery

from builds.models import BuildChange, Promotion
from builds.review import revision_readable
from corpus.models import Page, Revision
from corpus.selectors import page_get_visible
from grants.principals import Principal

REVISION_ID_LENGTH = 12  # the sha256 prefix that names a revision in URLs (unique within a page)


@dataclass(frozen=True)
class HistoryEntry:
    revision: Revision
    promoted_by: str
    promoted_at: datetime
    build_id: str | None
    build_title: str | None
    note: str

    @property
    def short_id(self) -> str:
        return self.revision.sha256[:REVISION_ID_LENGTH]


def page_history(*, principal: Principal | None, path: str, limit: int = 200) -> tuple[Page, list[HistoryEntry]]:
    """The visible page at ``path`` and its promoted revisions, newest first (``Page.DoesNotExist`` if hidden).

    One query for the revisions with their build and approval note joined in (no N+1).
    """
    page = page_get_visible(principal=principal, path=path)
    carried_by = BuildChange.objects.filter(revision=OuterRef("pk")).order_by("-build__finished_at")
    approval = Promotion.objects.filter(build_id=OuterRef("build_pk"))
    revisions = (
        Revision.objects.filter(page_id=page.pk, promoted_at__isnull=False)
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

    entries = [
        HistoryEntry(
            revision=revision,
            promoted_by=revision.promoted_by.username if revision.promoted_by is not None else "the system (import)",
            promoted_at=revision.promoted_at,  # type: ignore[arg-type]
            build_id=str(revision.build_public_id) if revision.build_public_id else None,  # type: ignore[attr-defined]
            build_title=revision.build_title,  # type: ignore[attr-defined]
            note=revision.note or "",  # type: ignore[attr-defined]
        )
        for revision in revisions
        if reads(revision)
    ]
    return page, entries


def entry_by_short_id(entries: list[HistoryEntry], short_id: str) -> HistoryEntry | None:
    """The entry whose revision id starts with ``short_id`` (at least 7 characters), if exactly one."""
    if len(short_id) < 7:
        return None
    found = [entry for entry in entries if entry.revision.sha256.startswith(short_id.lower())]
    return found[0] if len(found) == 1 else None
