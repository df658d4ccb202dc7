"""Who is calling an MCP endpoint, from the ``Authorization: Bearer`` header only.

Tokens are never read from the query string. A missing or invalid credential gets one
401 answer whatever the reason.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.http import HttpRequest
from oauth2_provider.models import get_access_token_model

from builds.services import CredentialInvalid, build_credential_resolve
from grants.principals import principal_for_user
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
    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    access = AccessToken.objects.select_related("user", "user__member").filter(token_checksum=checksum).first()
    if access is None or access.is_expired() or not access.resource:
        return None
    if not access.allows_audience(mcp_resource(settings.BRAIN_BASE_URL)):
        return None
    member = principal_for_user(access.user)
    if member is None:
        return None
    return Caller(principal=member, kind=PERSON, scopes=frozenset(access.scope.split()))
