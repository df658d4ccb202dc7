"""Explain access: for a principal and a page path, the effective permission and why.

Every grant the principal holds (directly or through a group) is weighed against the page
with the very SQL condition every query uses (``grants.predicates._reach_condition``); the
answer lists the grants that reach it and, for the others, the reason they do not — above
all why a restricted or secret page is not reached by a folder grant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from corpus.models import Page
from grants.models import Group, Member, Permission, Sensitivity, ServiceAccount
from grants.predicates import _reach_condition, subject_grants_sql
from grants.principals import Principal

Subject = Member | Group | ServiceAccount


@dataclass(frozen=True)
class GrantLine:
    """One grant the subject holds, and whether (and why, or why not) it reaches the page."""

    grant_id: int
    holder: str  # "member alice", "group sales" (through membership), "service account docs-mirror"
    scope: str  # "path topics/", "exact path topics/a.md", "category pricing"
    permission: str
    reaches: bool
    why: str


@dataclass
class Explanation:
    subject: str
    path: str
    category: str | None
    sensitivity: str
    page_exists: bool
    effective: str | None = None
    reaching: list[GrantLine] = field(default_factory=list)
    not_reaching: list[GrantLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _subject_sql(subject: Subject) -> tuple[str, tuple[Any, ...]]:
    if isinstance(subject, Group):
        return "SELECT g.id FROM grants_grant g WHERE g.group_id = %s", (subject.pk,)
    return subject_grants_sql(subject)


def _holders_sql(subject: Subject) -> tuple[str, tuple[Any, ...]]:
    """Every grant the subject holds whether or not it is active (to list them all)."""
    if isinstance(subject, Member):
        return (
            "SELECT h.id FROM grants_grant h WHERE h.member_id = %s OR h.group_id IN "
            "(SELECT gm.group_id FROM grants_groupmembership gm WHERE gm.member_id = %s)",
            (subject.pk, subject.pk),
        )
    if isinstance(subject, ServiceAccount):
        return "SELECT h.id FROM grants_grant h WHERE h.service_account_id = %s", (subject.pk,)
    return "SELECT h.id FROM grants_grant h WHERE h.group_id = %s", (subject.pk,)


def _label(subject: Subject) -> str:
    if isinstance(subject, Member):
        return f"member {subject.username}"
    if isinstance(subject, Group):
        return f"group {subject.name}"
    return f"service account {subject.name}"


def _scope(path: str | None, category: str | None) -> str:
    if category is not None:
        return f"category {category}"
    if path == "" or (path or "").endswith("/"):
        return f"folder {path or '(everything)'}"
    return f"exact path {path}"


def _why(reaches: bool, grant_path: str | None, grant_category: str | None, page: tuple[str, str | None, int]) -> str:
    path, category, sensitivity = page
    if sensitivity == Sensitivity.SECRET:
        return "the page is secret: no grant reaches a secret page"
    if grant_category is not None:
        if reaches:
            return f"the page's category is {grant_category}"
        return f"the page's category is {category or 'none'}, not {grant_category}"
    if grant_path == "" or (grant_path or "").endswith("/"):
        covers = path.startswith(grant_path or "")
        if reaches:
            return f"the page is under {grant_path or 'the root'} and ordinary"
        if covers:
            return (
                f"a folder grant reaches ordinary pages only and this page is {Sensitivity(sensitivity).label}: "
                "grant its exact path or its category"
            )
        return f"the page is not under {grant_path}"
    return "the grant names this exact page" if reaches else f"the grant names another page ({grant_path})"


def explain_access(
    subject: Subject,
    path: str,
    *,
    category: str | None = None,
    sensitivity: int | None = None,
    viewer: Principal | None = None,
) -> Explanation:
    """Why ``subject`` holds what it holds on the page at ``path``.

    The page's category and sensitivity are read from the page row when one exists (live or
    retired); otherwise ``category``/``sensitivity`` describe a page that would be written there.
    With ``viewer`` (an administrator asking in the admin), a page ``viewer`` cannot read is
    answered as no page at all — for a page that would be written there, and worded as that:
    being an administrator confers no content access, and the answer would otherwise tell a
    secret page's path, category and sensitivity from a guess.
    """
    rows = Page.objects.filter(path=path)
    if viewer is not None:
        rows = rows.visible_to(viewer, "read")
    page = rows.values_list("category", "sensitivity").first()
    if page is not None:
        category, sensitivity = page
    level = int(sensitivity if sensitivity is not None else Sensitivity.ORDINARY)
    explanation = Explanation(
        subject=_label(subject),
        path=path,
        category=category,
        sensitivity=Sensitivity(level).label,
        page_exists=page is not None,
    )
    if page is None:
        # To an administrator, a page they cannot read and no page read the same: both are
        # answered for a page that would be written here, and said to be that, never as a fact
        # about what is (or is not) at the path.
        where = "no page you can read is at this path" if viewer is not None else "no page at this path"
        explanation.notes.append(
            f"{where}: this is the answer for a page written here with category {category or 'none'} and "
            f"sensitivity {Sensitivity(level).label}"
        )
    if isinstance(subject, Member) and not (subject.is_active and subject.user.is_active):
        explanation.notes.append("the member is inactive: an inactive member holds no grants")
    if isinstance(subject, ServiceAccount) and not subject.is_active:
        explanation.notes.append("the service account is inactive: it holds no grants")
    subject_sql, subject_params = _subject_sql(subject)
    # All the subject's grants, each with whether it counts (``held``: the predicate's own
    # subject rule, which drops an inactive member's) and whether its scope reaches the page.
    holders_sql, holders_params = _holders_sql(subject)
    sql = f"""SELECT g.id, g.path, g.category, g.permission, gr.name, g.id IN ({subject_sql}) AS held,
                     {_reach_condition("o")} AS reaches
                FROM grants_grant g
                LEFT JOIN grants_group gr ON gr.id = g.group_id
                CROSS JOIN (VALUES (%s::varchar, %s::varchar, %s::integer)) AS o(path, category, sensitivity)
               WHERE g.id IN ({holders_sql})
               ORDER BY g.permission DESC, g.id"""
    params = (*subject_params, path, category, level, *holders_params)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    best: int | None = None
    for grant_id, grant_path, grant_category, permission, group_name, held, reaches in rows:
        effective_reach = bool(held and reaches)
        line = GrantLine(
            grant_id=grant_id,
            holder=f"group {group_name}" if group_name else explanation.subject,
            scope=_scope(grant_path, grant_category),
            permission=Permission(permission).label,
            reaches=effective_reach,
            why=_why(bool(reaches), grant_path, grant_category, (path, category, level))
            if held
            else "held by an inactive subject",
        )
        if effective_reach:
            explanation.reaching.append(line)
            best = permission if best is None else max(best, permission)
        else:
            explanation.not_reaching.append(line)
    explanation.effective = Permission(best).label if best is not None else None
    if not rows:
        explanation.notes.append("it holds no grant at all")
    return explanation
