"""Querysets of the grants app, and ``RestrictedQuerySet``: the one shape of "what may this
principal see" for every access-controlled model.

``Model.objects.visible_to(principal, permission)`` is the only way views, selectors and
tools read access-controlled rows (NetBox's RestrictedQuerySet idea). Nobody (``None``)
sees nothing; each model's queryset says in ``restrict`` what a principal sees, as a SQL
filter inside the same query — never a Python pass over fetched rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self, TypeVar

from django.db import models

from grants.principals import Principal

if TYPE_CHECKING:
    from grants.models import Grant  # noqa: F401

M = TypeVar("M", bound=models.Model)


class RestrictedQuerySet(models.QuerySet[M]):
    def visible_to(self, principal: Principal | None, permission: int | str = "read") -> Self:
        """The rows on which ``principal`` holds at least ``permission``; none for no principal."""
        if principal is None:
            return self.none()
        return self.restrict(principal, permission)

    def restrict(self, principal: Principal, permission: int | str) -> Self:
        """What ``principal`` (never None) sees at ``permission``: each model's own rule."""
        raise NotImplementedError(f"{type(self).__name__} must say who sees what")


class GrantQuerySet(models.QuerySet["Grant"]):
    """Grants; ``for_subject`` narrows to one principal's own and group grants."""

    def for_subject(self, principal: object) -> GrantQuerySet:
        from grants.predicates import subject_grants

        return self.filter(pk__in=subject_grants(principal).values("pk"))  # type: ignore[arg-type]
