"""Who can see what in the corpus: ``visible_to(principal, permission)`` on every model.

The predicate is SQL inside the query (``grants.predicates``): no principal, an unknown
permission or no matching grant selects nothing; ``SYSTEM`` sees everything, explicitly.
Pages are visible only while live (they have a current revision); revisions, chunks and
figures are visible through their live page; sources through their own scope path
``captures/<key>``, category and tier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Exists, OuterRef
from django.db.models.expressions import RawSQL

from grants.predicates import visible_ids_sql
from grants.principals import Principal, SystemPrincipal

if TYPE_CHECKING:
    from corpus.models import Chunk, Figure, Page, Revision, Source  # noqa: F401


def _pages(principal: Principal | None, permission: int | str) -> Any:
    from corpus.models import Page

    return Page.objects.visible_to(principal, permission)


class PageQuerySet(models.QuerySet["Page"]):
    def visible_to(self, principal: Principal | None, permission: int | str = "read") -> PageQuerySet:
        """Live pages on which ``principal`` holds at least ``permission``."""
        if principal is None:
            return self.none()
        live = self.filter(current_revision__isnull=False)
        predicate = visible_ids_sql(principal, permission, table="corpus_page")
        return live if predicate is None else live.filter(pk__in=RawSQL(*predicate))


class RevisionQuerySet(models.QuerySet["Revision"]):
    def visible_to(self, principal: Principal | None, permission: int | str = "read") -> RevisionQuerySet:
        """Promoted revisions (the live one and its history) of pages visible to ``principal``."""
        if principal is None:
            return self.none()
        if isinstance(principal, SystemPrincipal):
            return self.filter(promoted_at__isnull=False)
        return self.filter(promoted_at__isnull=False, page__in=_pages(principal, permission).values("pk"))


class ChunkQuerySet(models.QuerySet["Chunk"]):
    def visible_to(self, principal: Principal | None, permission: int | str = "read") -> ChunkQuerySet:
        """Chunks of the current revision of at least one page visible to ``principal``."""
        if principal is None:
            return self.none()
        from corpus.models import RevisionChunk

        live_links = RevisionChunk.objects.filter(
            chunk=OuterRef("pk"),
            revision__current_of__in=_pages(principal, permission).values("pk"),
        )
        return self.filter(Exists(live_links))


class SourceQuerySet(models.QuerySet["Source"]):
    def visible_to(self, principal: Principal | None, permission: int | str = "read") -> SourceQuerySet:
        """Live sources reached by ``principal``'s grants on ``captures/<key>``, category and tier."""
        if principal is None:
            return self.none()
        live = self.filter(is_live=True)
        predicate = visible_ids_sql(principal, permission, table="corpus_source", path_column="scope_path")
        return live if predicate is None else live.filter(pk__in=RawSQL(*predicate))


class FigureQuerySet(models.QuerySet["Figure"]):
    def visible_to(self, principal: Principal | None, permission: int | str = "read") -> FigureQuerySet:
        """Figure records whose page is visible to ``principal``."""
        if principal is None:
            return self.none()
        return self.filter(is_live=True, page__in=_pages(principal, permission).values("pk"))
