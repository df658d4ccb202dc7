"""Who holds an OAuth access token: one hand-written query on every protected request."""

from __future__ import annotations

import hashlib
import json

from django.contrib.auth import get_user_model
from oauth2_provider.models import get_access_token_model

from brain.callers import PERSON, Caller
from brain.rows import columns, fetch_one, hydrate
from grants.models import Member

AccessToken = get_access_token_model()


def access_token_caller(raw_token: str) -> Caller | None:
    """The ``person`` caller behind an OAuth access token (``brain.callers`` resolver)."""
    held = token_holder(raw_token)
    if held is None:
        return None
    member, scope, resources = held
    return Caller(principal=member, kind=PERSON, scopes=frozenset(scope.split()), resources=tuple(resources))


def token_holder(raw_token: str) -> tuple[Member, str, list[str]] | None:
    """(member, scope, resource) behind an unexpired access token of an active member, in one query.

    The token is looked up by its SHA-256, as the toolkit stores it.

    Hand-written because it runs on every MCP request: the same lookup through the ORM
    (token, user and member with two joins) cost two milliseconds to compile.
    """
    User = get_user_model()
    sql = f"""SELECT t.scope, t.resource, {columns(Member, "m")}, {columns(User, "u")}
                FROM {AccessToken._meta.db_table} t
                JOIN {User._meta.db_table} u ON u.id = t.user_id AND u.is_active
                JOIN {Member._meta.db_table} m ON m.user_id = u.id AND m.is_active
               WHERE t.token_checksum = %s AND t.expires > now()"""
    row = fetch_one(sql, [hashlib.sha256(raw_token.encode("utf-8")).hexdigest()])
    if row is None:
        return None
    member, user = hydrate(row, [Member, User], start=2)
    member.user = user  # type: ignore[attr-defined]
    resource = row[1]
    resources = json.loads(resource) if isinstance(resource, str) else list(resource or [])
    return member, str(row[0]), resources  # type: ignore[return-value]
