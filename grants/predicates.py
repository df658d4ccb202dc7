"""The access predicate: which grants reach an object, as SQL.

One rule, used for pages, sources and (through pages) revisions, chunks and figures:

- a grant reaches an object when its permission is at least the one asked for, its
  subject is the principal (the member themselves, one of their groups, or the service
  account, all active), and its scope matches:
    * an exact path equal to the object's path (ordinary and restricted tiers),
    * a category equal to the object's category (ordinary and restricted tiers),
    * a prefix (``''`` or ending in ``/``) that starts the object's path (ordinary only);
- a secret object is reached by no grant.

Effective permission is the maximum over matching grants; there are no deny rules.
Everything here builds querysets: grants are read by the database on every query,
never cached in Python, so a revocation counts on the next request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import CharField, ExpressionWrapper, F, IntegerField, Max, Q, QuerySet, Value
from django.db.models.functions import Left, Length

from grants.principals import Principal, SystemPrincipal

if TYPE_CHECKING:
    from grants.models import Grant


def _permission_value(permission: int | str) -> int | None:
    from grants.models import Permission

    if isinstance(permission, str):
        try:
            return int(Permission.from_name(permission))
        except ValueError:
            return None
    return int(permission) if permission in Permission.values else None


def subject_grants(principal: Principal | None) -> QuerySet[Grant]:
    """Grants held by ``principal`` directly or through its groups; none if inactive."""
    from grants.models import Grant, GroupMembership, Member, ServiceAccount

    if isinstance(principal, Member):
        active = Member.objects.filter(pk=principal.pk, is_active=True, user__is_active=True).values("pk")
        groups = GroupMembership.objects.filter(member_id__in=active).values("group_id")
        return Grant.objects.filter(Q(member_id__in=active) | Q(group_id__in=groups))
    if isinstance(principal, ServiceAccount):
        active_accounts = ServiceAccount.objects.filter(pk=principal.pk, is_active=True).values("pk")
        return Grant.objects.filter(service_account_id__in=active_accounts)
    return Grant.objects.none()


def matching_grants(
    principal: Principal | None,
    permission: int | str,
    *,
    path: Any,
    category: Any,
    sensitivity: Any,
) -> QuerySet[Grant]:
    """Grants of ``principal`` with at least ``permission`` that reach one object.

    ``path``, ``category`` and ``sensitivity`` are expressions for the object: an
    ``OuterRef`` (inside a correlated subquery) or a ``Value`` (a page that does not
    exist yet).
    """
    from grants.models import Sensitivity

    required = _permission_value(permission)
    if required is None:
        return subject_grants(None)
    return (
        subject_grants(principal)
        .filter(permission__gte=required)
        # Typed wrappers: a bare OuterRef has no output field, so lookups on it fail.
        .alias(
            object_path=ExpressionWrapper(path, output_field=CharField()),
            object_category=ExpressionWrapper(category, output_field=CharField()),
            object_sensitivity=ExpressionWrapper(sensitivity, output_field=IntegerField()),
        )
        .filter(object_sensitivity__lt=Sensitivity.SECRET)
        .filter(
            Q(path=F("object_path"))
            | Q(category__isnull=False, category=F("object_category"))
            | (
                (Q(path="") | Q(path__endswith="/"))
                & Q(object_sensitivity=Sensitivity.ORDINARY)
                & Q(path=Left(F("object_path"), Length("path")))
            )
        )
    )


# The tables the set-wise predicate may be applied to, with their path column.
_PREDICATE_TARGETS = {("corpus_page", "path"), ("corpus_source", "scope_path")}


def visible_ids_sql(
    principal: Principal | None,
    permission: int | str,
    *,
    table: str,
    path_column: str = "path",
) -> tuple[str, tuple[Any, ...]] | None:
    """SQL selecting the ids of rows of ``table`` that ``principal`` may see, and its params.

    Returns None for ``SYSTEM`` (no filter). The same rule as ``matching_grants``, written
    set-wise so it is driven by indexes rather than evaluated per row: the caller's grants
    (usually a handful) are joined to the objects by exact path, by category, and by
    prefix as a range on the path (``path ~>=~ prefix AND path ~<~ prefix || '~'``, which
    a ``varchar_pattern_ops`` index serves; '~' sorts after every character a canonical
    path may contain). ``table``/``path_column`` are code constants, never user input.
    """
    from grants.models import Sensitivity

    if (table, path_column) not in _PREDICATE_TARGETS:
        raise ValueError(f"no access predicate for {table}.{path_column}")
    if isinstance(principal, SystemPrincipal):
        return None
    required = _permission_value(permission)
    if required is None:
        return "SELECT NULL::bigint WHERE false", ()
    grants_sql, grants_params = (
        subject_grants(principal)
        .filter(permission__gte=required)
        .order_by()
        .values("path", "category")
        .query.sql_with_params()
    )
    ordinary, secret = int(Sensitivity.ORDINARY), int(Sensitivity.SECRET)
    sql = f"""
        WITH g AS MATERIALIZED ({grants_sql})
        SELECT o.id FROM g JOIN {table} o ON o.{path_column} = g.path
         WHERE o.sensitivity < {secret}
        UNION
        SELECT o.id FROM g JOIN {table} o ON o.category = g.category
         WHERE g.category IS NOT NULL AND o.sensitivity < {secret}
        UNION
        SELECT o.id FROM g JOIN {table} o
            ON o.{path_column} ~>=~ g.path AND o.{path_column} ~<~ (g.path || '~')
         WHERE (g.path = '' OR right(g.path, 1) = '/') AND o.sensitivity = {ordinary}
    """
    return sql, tuple(grants_params)


def effective_permission(
    principal: Principal | None, *, path: str, category: str | None, sensitivity: int
) -> int | None:
    """The maximum permission ``principal`` holds on an object described by value.

    Used for objects that may not exist yet (a page being imported). Returns None for
    no access; ``SYSTEM`` holds approve everywhere.
    """
    from grants.models import Permission

    if isinstance(principal, SystemPrincipal):
        return int(Permission.APPROVE)
    best = matching_grants(
        principal,
        Permission.READ,
        path=Value(path, output_field=CharField()),
        category=Value(category, output_field=CharField()),
        sensitivity=Value(int(sensitivity), output_field=IntegerField()),
    ).aggregate(best=Max("permission"))["best"]
    return int(best) if best is not None else None
