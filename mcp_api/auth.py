"""Who is calling an MCP endpoint, from the ``Authorization: Bearer`` header only.

Tokens are never read from the query string. A missing or invalid credential gets one
401 answer whatever the reason.
"""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from oauth2_provider.models import get_access_token_model
from oauth2_provider.oauth2_validators import validate_resource_as_url_prefix

from brain.rows import columns, fetch_one, hydrate
from builds.services import CredentialInvalid, build_credential_resolve
from grants.models import Member
from mcp_api.tools import BUILD, PERSON, Caller
from oauth.config import mcp_resource

AccessToken = get_access_token_model()


def bearer_token(request: HttpRequest) -> str | None:
    header = str(request.META.get("HTTP_AUTHORIZATION", ""))
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def build_caller(request: HttpRequest) -> Caller | None:
    """The caller behind a build credential (its requester's grants, bound to its build), or None."""
    token = bearer_token(request)
    if token is None:
        return None
    try:
        build = build_credential_resolve(token)
    except CredentialInvalid:
        return None
    if build.requester is None or not build.requester.is_active:
        return None
    return Caller(principal=build.requester, kind=BUILD, build=build)


def _active_member_for_token(checksum: str) -> tuple[Member, str, list[str]] | None:
    """(member, scope, resource) behind an unexpired access token of an active member, in one query.

    Hand-written because it runs on every MCP request: the same lookup through the ORM
    (token, user and member with two joins) cost two milliseconds to compile.
    """
    User = get_user_model()
    sql = f"""SELECT t.scope, t.resource, {columns(Member, "m")}, {columns(User, "u")}
                FROM {AccessToken._meta.db_table} t
                JOIN {User._meta.db_table} u ON u.id = t.user_id AND u.is_active
                JOIN {Member._meta.db_table} m ON m.user_id = u.id AND m.is_active
               WHERE t.token_checksum = %s AND t.expires > now()"""
    row = fetch_one(sql, [checksum])
    if row is None:
        return None
    member, user = hydrate(row, [Member, User], start=2)
    member.user = user  # type: ignore[attr-defined]
    resource = row[1]
    resources = json.loads(resource) if isinstance(resource, str) else list(resource or [])
    return member, str(row[0]), resources  # type: ignore[return-value]


def person_caller(request: HttpRequest) -> Caller | None:
    """The person behind an OAuth access token, or None.

    The token must be unexpired, bound (RFC 8707) to this deployment's MCP resource, and
    belong to a user who is an active member *now*: deactivating a member stops every
    app they connected on its next request. Scopes come from the token; the principal's
    own grants decide what any tool can see.
    """
    token = bearer_token(request)
    if token is None:
        return None
    found = _active_member_for_token(hashlib.sha256(token.encode("utf-8")).hexdigest())
    if found is None:
        return None
    member, scope, resources = found
    ours = mcp_resource(settings.BRAIN_BASE_URL)
    if not any(validate_resource_as_url_prefix(ours, [resource]) for resource in resources):
        return None  # a token bound to nothing, or to another resource, is not for us
    return Caller(principal=member, kind=PERSON, scopes=frozenset(scope.split()))
