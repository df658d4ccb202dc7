"""Who is calling an MCP endpoint, from the ``Authorization: Bearer`` header only.

Tokens are never read from the query string. A missing or invalid credential gets one
401 answer whatever the reason.
"""

from __future__ import annotations

from django.http import HttpRequest

from answers.services import CREDENTIAL_PREFIX, question_credential_owner
from builds.services import CredentialInvalid, build_credential_resolve
from mcp_api.tools import BUILD, PERSON, QUESTION, Caller
from oauth.audience import AUDIENCES_BY_PATH, oauth_token_fits
from oauth.config import MCP_PATH
from oauth.tokens import token_holder


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
    if token.startswith(CREDENTIAL_PREFIX):
        owner = question_credential_owner(token)
        return Caller(principal=owner, kind=QUESTION) if owner is not None else None
    found = token_holder(token)
    if found is None:
        return None
    member, scope, resources = found
    if not oauth_token_fits(AUDIENCES_BY_PATH[MCP_PATH], scope, resources):
        return None  # a token bound to nothing, or to another resource, is not for us
    return Caller(principal=member, kind=PERSON, scopes=frozenset(scope.split()))
