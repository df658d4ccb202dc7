"""Querysets of the grants app."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

if TYPE_CHECKING:
    from grants.models import Grant  # noqa: F401


class GrantQuerySet(models.QuerySet["Grant"]):
    """Grants; ``for_subject`` narrows to one principal's own and group grants."""

    def for_subject(self, principal: object) -> GrantQuerySet:
        from grants.predicates import subject_grants

        return self.filter(pk__in=subject_grants(principal).values("pk"))  # type: ignore[arg-type]
