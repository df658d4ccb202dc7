"""Who is calling an MCP endpoint, from the ``Authorization: Bearer`` header only.

Tokens are never read from the query string. A missing or invalid credential gets one
401 answer whatever the reason.
"""

from __future__ import annotations

from django.http import HttpRequest

from builds.services import CredentialInvalid, build_credential_resolve
from mcp_api.tools import BUILD, Caller


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
