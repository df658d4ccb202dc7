"""Who can see what in the corpus: ``visible_to(principal, permission)`` on every model
(``grants.querysets.RestrictedQuerySet``; each ``restrict`` below is one model's rule).

The predicate is SQL inside the query (``grants.predicates``): no principal, an unknown
permission or no matching grant selects nothing; ``SYSTEM`` sees everything, explicitly.
Pages are visible only while live (they have a current revision); revisions, chunks and
figures are visible through their live page; sources through their own scope path
``captures/<key>``, category and tier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import Exists, OuterRef
from django.db.models.expressions import RawSQL

from grants.predicates import visible_ids_sql
from grants.principals import Principal, SystemPrincipal
from grants.querysets import RestrictedQuerySet

if TYPE_CHECKING:
    from corpus.models import Chunk, Figure, Page, Revision, Source  # noqa: F401


def _pages(principal: Principal | None, permission: int | str) -> Any:
    from corpus.models import Page

    return Page.objects.visible_to(principal, permission)


class PageQuerySet(RestrictedQuerySet["Page"]):
    def restrict(self, principal: Principal, permission: int | str) -> PageQuerySet:
        """Live pages on which ``principal`` holds at least ``permission``."""
        live = self.filter(current_revision__isnull=False)
        predicate = visible_ids_sql(principal, permission, table="corpus_page")
        return live if predicate is None else live.filter(pk__in=RawSQL(*predicate))


class RevisionQuerySet(RestrictedQuerySet["Revision"]):
    def restrict(self, principal: Principal, permission: int | str) -> RevisionQuerySet:
        """Promoted revisions (the live one and its history) of pages visible to ``principal``."""
        if isinstance(principal, SystemPrincipal):
            return self.filter(promoted_at__isnull=False)
        return self.filter(promoted_at__isnull=False, page__in=_pages(principal, permission).values("pk"))


class ChunkQuerySet(RestrictedQuerySet["Chunk"]):
    def restrict(self, principal: Principal, permission: int | str) -> ChunkQuerySet:
        """Chunks of the current revision of at least one page visible to ``principal``."""
        from corpus.models import RevisionChunk

        live_links = RevisionChunk.objects.filter(
            chunk=OuterRef("pk"),
            revision__current_of__in=_pages(principal, permission).values("pk"),
        )
        return self.filter(Exists(live_links))


class SourceQuerySet(RestrictedQuerySet["Source"]):
    def restrict(self, principal: Principal, permission: int | str) -> SourceQuerySet:
        """Live sources reached by ``principal``'s grants on ``captures/<key>``, category and tier."""
        live = self.filter(is_live=True)
        predicate = visible_ids_sql(principal, permission, table="corpus_source", path_column="scope_path")
        return live if predicate is None else live.filter(pk__in=RawSQL(*predicate))


class FigureQuerySet(RestrictedQuerySet["Figure"]):
    def restrict(self, principal: Principal, permission: int | str) -> FigureQuerySet:
        """Figure records whose page is visible to ``principal``."""
        return self.filter(is_live=True, page__in=_pages(principal, permission).values("pk"))
