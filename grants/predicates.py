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

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

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


def subject_grants_sql(principal: Principal | None) -> tuple[str, tuple[Any, ...]]:
    """SQL selecting the ids of the grants ``principal`` holds, directly or through its groups.

    An inactive member (or inactive user, or inactive service account) holds none. This is
    the one written form of "whose grants are these"; ``subject_grants`` wraps it for the
    ORM. Hand-written because it runs on every read and the ORM took a millisecond to
    compile it each time.
    """
    from grants.models import Member, ServiceAccount

    if isinstance(principal, Member):
        return (
            """SELECT g.id FROM grants_grant g
                WHERE (g.member_id = %s
                       OR g.group_id IN (SELECT gm.group_id FROM grants_groupmembership gm WHERE gm.member_id = %s))
                  AND EXISTS (SELECT 1 FROM grants_member m JOIN auth_user u ON u.id = m.user_id
                               WHERE m.id = %s AND m.is_active AND u.is_active)""",
            (principal.pk, principal.pk, principal.pk),
        )
    if isinstance(principal, ServiceAccount):
        return (
            """SELECT g.id FROM grants_grant g
                WHERE g.service_account_id = %s
                  AND EXISTS (SELECT 1 FROM grants_serviceaccount s WHERE s.id = %s AND s.is_active)""",
            (principal.pk, principal.pk),
        )
    return "SELECT NULL::bigint WHERE false", ()


def subject_grants(principal: Principal | None) -> QuerySet[Grant]:
    """Grants held by ``principal`` directly or through its groups; none if inactive."""
    from grants.models import Grant

    if not isinstance(principal, SystemPrincipal) and principal is not None:
        return Grant.objects.filter(pk__in=RawSQL(*subject_grants_sql(principal)))
    return Grant.objects.none()


def holds_any(principal: Principal | None, permission: int) -> bool:
    """Whether ``principal`` holds ``permission`` (or more) anywhere at all: one indexed query,
    for callers that would otherwise weigh every candidate to find none (a reader's review
    queue). The system principal holds everything; nobody and an inactive subject nothing."""
    if isinstance(principal, SystemPrincipal):
        return True
    if principal is None:
        return False
    held, params = subject_grants_sql(principal)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS (SELECT 1 FROM grants_grant g WHERE g.id IN ({held}) AND g.permission >= %s)",
            (*params, int(permission)),
        )
        return bool(cursor.fetchone()[0])


def holds_under(principal: Principal | None, permission: int, prefix: str) -> bool:
    """Whether ``principal`` holds ``permission`` (or more) somewhere at or under the folder
    ``prefix`` (``captures/``): a grant on it, above it, inside it, or by category (which may
    reach anything there). For offering a form only to whom its saves could allow; the save
    still weighs the exact object."""
    if isinstance(principal, SystemPrincipal):
        return True
    if principal is None:
        return False
    held, params = subject_grants_sql(principal)
    inside = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT EXISTS (SELECT 1 FROM grants_grant g WHERE g.id IN ({held}) AND g.permission >= %s
                  AND (g.path IS NULL OR g.path = '' OR g.path LIKE %s OR starts_with(%s, g.path)))""",
            (*params, int(permission), inside, prefix),
        )
        return bool(cursor.fetchone()[0])


def _reach_condition(obj: str) -> str:
    """SQL: grant ``g`` reaches the object ``obj`` (a table name or alias with path, category,
    sensitivity). The per-object form of the rule; ``visible_ids_sql`` is its set-wise form."""
    from grants.models import Sensitivity

    ordinary, secret = int(Sensitivity.ORDINARY), int(Sensitivity.SECRET)
    return f"""({obj}.sensitivity < {secret} AND (
                  g.path = {obj}.path
               OR (g.category IS NOT NULL AND g.category = {obj}.category)
               OR ((g.path = '' OR right(g.path, 1) = '/') AND {obj}.sensitivity = {ordinary}
                   AND left({obj}.path, length(g.path)) = g.path)))"""


def reaches_sql(
    principal: Principal | None, permission: int | str, *, table: str, alias: str | None = None
) -> tuple[str, tuple[Any, ...]]:
    """A boolean SQL expression on a row of ``table``: ``principal`` holds ``permission`` on it.

    For reads of one object by key (a page by path), where checking that row's grants is
    cheaper than computing every visible id. ``table`` is a code constant and ``alias`` the
    name the row goes by in the caller's SQL (default: the table name), never user input.
    Not for ``SYSTEM``.
    """
    if table not in {target for target, column in _PREDICATE_TARGETS if column == "path"}:
        raise ValueError(f"no per-row access predicate for {table}")
    return reaches_row_sql(principal, permission, alias=alias or table)


def reaches_row_sql(principal: Principal | None, permission: int | str, *, alias: str) -> tuple[str, tuple[Any, ...]]:
    """``reaches_sql`` on any row named ``alias`` that has ``path``, ``category`` and
    ``sensitivity`` columns (e.g. a derived table of sources with ``scope_path AS path``).
    ``alias`` is a code constant, never user input. Not for ``SYSTEM``."""
    required = _permission_value(permission)
    if required is None or principal is None or isinstance(principal, SystemPrincipal):
        return "false", ()
    subject_sql, subject_params = subject_grants_sql(principal)
    sql = f"""EXISTS (SELECT 1 FROM grants_grant g
                       WHERE g.id IN ({subject_sql}) AND g.permission >= %s AND {_reach_condition(alias)})"""
    return sql, (*subject_params, required)


# The tables the set-wise predicate may be applied to, with their path column.
_PREDICATE_TARGETS = {("corpus_page", "path"), ("corpus_source", "scope_path")}
# The columns it may select from each (search selects pages' live revisions directly).
_PROJECTIONS = {"corpus_page": {"id", "current_revision_id"}, "corpus_source": {"id"}}


def visible_ids_sql(
    principal: Principal | None,
    permission: int | str,
    *,
    table: str,
    path_column: str = "path",
    column: str = "id",
) -> tuple[str, tuple[Any, ...]] | None:
    """SQL selecting ``column`` (the id) of rows of ``table`` that ``principal`` may see, and its params.

    Returns None for ``SYSTEM`` (no filter). The same rule as ``reaches_sql``, written
    set-wise so it is driven by indexes rather than evaluated per row: the caller's grants
    (usually a handful) are joined to the objects by exact path, by category, and by
    prefix as a range on the path (``path ~>=~ prefix AND path ~<~ prefix || '~'``, which
    a ``varchar_pattern_ops`` index serves; '~' sorts after every character a canonical
    path may contain). ``table``/``path_column``/``column`` are code constants, never
    user input.

    The result is a *set*: a row reached by two grants is listed twice (``UNION ALL`` —
    removing duplicates cost 1.5 ms per 10k visible pages), so use it only for membership
    (``IN``, a hash), never for counting rows.
    """
    from grants.models import Sensitivity

    if (table, path_column) not in _PREDICATE_TARGETS or column not in _PROJECTIONS[table]:
        raise ValueError(f"no access predicate for {table}.{path_column} selecting {column}")
    if isinstance(principal, SystemPrincipal):
        return None
    required = _permission_value(permission)
    if required is None:
        return "SELECT NULL::bigint WHERE false", ()
    subject_sql, subject_params = subject_grants_sql(principal)
    grants_sql = f"SELECT path, category FROM grants_grant WHERE id IN ({subject_sql}) AND permission >= %s"
    grants_params = (*subject_params, required)
    ordinary, secret = int(Sensitivity.ORDINARY), int(Sensitivity.SECRET)
    sql = f"""
        WITH g AS MATERIALIZED ({grants_sql})
        SELECT o.{column} FROM g JOIN {table} o ON o.{path_column} = g.path
         WHERE o.sensitivity < {secret}
        UNION ALL
        SELECT o.{column} FROM g JOIN {table} o ON o.category = g.category
         WHERE g.category IS NOT NULL AND o.sensitivity < {secret}
        UNION ALL
        SELECT o.{column} FROM g JOIN {table} o
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
    return effective_permissions(principal, [(path, category, int(sensitivity))])[0]


def members_holding(permission: int, *, path: str, category: str | None, sensitivity: int) -> set[int]:
    """Ids of the active members holding at least ``permission`` on an object described by value.

    The set-wise twin of ``effective_permission`` (same reach condition, same subjects:
    direct grants and grants to a member's groups, active member and user). Used to tell a
    requester who could approve their build; service accounts never approve.
    """
    sql = f"""SELECT DISTINCT m.id
                FROM grants_member m
                JOIN auth_user u ON u.id = m.user_id AND u.is_active
                CROSS JOIN (VALUES (%s::varchar, %s::varchar, %s::integer)) AS o(path, category, sensitivity)
                JOIN grants_grant g
                  ON (g.member_id = m.id
                      OR g.group_id IN (SELECT gm.group_id FROM grants_groupmembership gm WHERE gm.member_id = m.id))
                 AND g.permission >= %s AND {_reach_condition("o")}
               WHERE m.is_active"""
    with connection.cursor() as cursor:
        cursor.execute(sql, (path, category, int(sensitivity), int(permission)))
        return {row[0] for row in cursor.fetchall()}


def members_holding_all(permission: int, objects: list[tuple[str, str | None, int]]) -> set[int]:
    """Ids of the active members holding at least ``permission`` on *every* one of ``objects``.

    The intersection of ``members_holding`` over ``objects`` (same reach condition, same
    subjects), in one query however many objects: a requester's page of a 2,000-file build
    asked once per file. ``objects`` are ``(path, category, sensitivity)``; none gives the
    empty set (no object, nothing to intersect). Each object's reaching grants are found by
    index (exact path, category, and each of its path's prefixes ending in '/', '' included —
    exactly the grant paths ``_reach_condition`` lets reach it as a prefix); objects reached
    by the same grants are counted once, so the member expansion is per distinct grant set,
    not per object.
    """
    from grants.models import Sensitivity

    distinct = list(dict.fromkeys((path, category, int(sensitivity)) for path, category, sensitivity in objects))
    if not distinct:
        return set()
    ordinary, secret = int(Sensitivity.ORDINARY), int(Sensitivity.SECRET)
    sql = f"""
        WITH o AS MATERIALIZED (
            SELECT * FROM unnest(%s::integer[], %s::varchar[], %s::varchar[], %s::integer[])
                       AS o(i, path, category, sensitivity)),
        g AS MATERIALIZED (
            SELECT id, path, category, member_id, group_id FROM grants_grant WHERE permission >= %s),
        reach AS (
            SELECT o.i, g.id FROM o JOIN g ON g.path = o.path WHERE o.sensitivity < {secret}
            UNION
            SELECT o.i, g.id FROM o JOIN g ON g.category = o.category WHERE o.sensitivity < {secret}
            UNION
            SELECT o.i, g.id
              FROM o CROSS JOIN LATERAL (
                       SELECT ''::varchar AS prefix
                       UNION ALL
                       SELECT left(o.path, n) FROM generate_series(1, length(o.path)) AS n
                        WHERE substr(o.path, n, 1) = '/') AS p
              JOIN g ON g.path = p.prefix
             WHERE o.sensitivity = {ordinary}),
        sets AS (
            SELECT DISTINCT coalesce(array_agg(r.id ORDER BY r.id) FILTER (WHERE r.id IS NOT NULL), '{{}}') AS ids
              FROM o LEFT JOIN reach r ON r.i = o.i
             GROUP BY o.i),
        numbered AS MATERIALIZED (SELECT row_number() OVER () AS s, ids FROM sets),
        granted AS (SELECT n.s, g.member_id, g.group_id FROM numbered n CROSS JOIN unnest(n.ids) AS x(id)
                      JOIN g ON g.id = x.id),
        holders AS (
            SELECT s, member_id FROM granted WHERE member_id IS NOT NULL
            UNION
            SELECT granted.s, gm.member_id FROM granted
              JOIN grants_groupmembership gm ON gm.group_id = granted.group_id)
        SELECT h.member_id
          FROM holders h
          JOIN grants_member m ON m.id = h.member_id AND m.is_active
          JOIN auth_user u ON u.id = m.user_id AND u.is_active
         GROUP BY h.member_id
        HAVING count(*) = (SELECT count(*) FROM numbered)"""
    params = (
        list(range(len(distinct))),
        [path for path, _, _ in distinct],
        [category for _, category, _ in distinct],
        [sensitivity for _, _, sensitivity in distinct],
        int(permission),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


def effective_permissions(principal: Principal | None, objects: list[tuple[str, str | None, int]]) -> list[int | None]:
    """``effective_permission`` for many objects described by value, in one query.

    ``objects`` are ``(path, category, sensitivity)``; the answer is in the same order (None
    for no access). Lets a page that weighs many objects (the builds awaiting review)
    ask the database once instead of once per object.
    """
    from grants.models import Permission

    if not objects:
        return []
    if isinstance(principal, SystemPrincipal):
        return [int(Permission.APPROVE)] * len(objects)
    if principal is None:
        return [None] * len(objects)
    subject_sql, subject_params = subject_grants_sql(principal)
    # Four arrays, not four parameters per object: a statement takes at most 65,535 parameters,
    # and a large build weighs thousands of objects.
    sql = f"""SELECT o.i, max(g.permission)
                FROM unnest(%s::integer[], %s::varchar[], %s::varchar[], %s::integer[])
                     AS o(i, path, category, sensitivity)
                LEFT JOIN grants_grant g ON g.id IN ({subject_sql}) AND {_reach_condition("o")}
               GROUP BY o.i"""
    params = (
        list(range(len(objects))),
        [path for path, _, _ in objects],
        [category for _, category, _ in objects],
        [int(sensitivity) for _, _, sensitivity in objects],
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, *subject_params))
        found = {index: best for index, best in cursor.fetchall()}
    return [int(found[index]) if found.get(index) is not None else None for index in range(len(objects))]
