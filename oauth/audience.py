"""Which surface each path-routed API is, for the APIs that predate REST v1.

``brain.callers`` holds the one table of what each surface requires (credential kinds,
scope, OAuth resource); this module only maps the legacy paths onto its rows. Every route
under /api/ and /prompt-capsules/ must map to a surface, or be a REST v1 view (which
names its own) — tests/brain/test_scope_matrix.py walks the URL conf to prove it.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from brain.callers import (
    MCP_PATH,
    MEMORY_API_PATH,
    REST_API_PATH,
    SURFACES,
    bearer_token,
    caller_for,
    refusal_reason,
    resolve,
)
from brain.errors import json_error
from grants.models import Member

# Longest prefix first.
LEGACY_ROUTES: tuple[tuple[str, str], ...] = (
    ("/api/build/mcp", "mcp.build"),
    (MCP_PATH, "mcp.person"),
    (MEMORY_API_PATH + "/", "memory.legacy"),
    ("/prompt-capsules/", "capsules"),
    ("/api/sources", "sources.legacy"),
    ("/api/builds/", "session.only"),
)


def surface_for(path: str) -> str | None:
    """The surface of a legacy API path (None: not one that takes bearer credentials)."""
    for prefix, surface in LEGACY_ROUTES:
        if path == prefix or path.startswith(prefix.rstrip("/") + "/") or path == prefix.rstrip("/"):
            return surface
    return None


def is_rest_v1(path: str) -> bool:
    return path == REST_API_PATH or path.startswith(REST_API_PATH + "/")


def member_for(request: HttpRequest) -> Member | None:
    """The member calling a legacy API with a credential its surface admits, else None."""
    surface = surface_for(request.path)
    if surface is None:
        return None
    caller = caller_for(request, surface)
    return caller.principal if caller is not None and isinstance(caller.principal, Member) else None


def legacy_refusal(request: HttpRequest, message: str) -> JsonResponse:
    """The answer when ``member_for`` found no member: RFC 6750's two cases, never confused.

    401 ``unauthenticated`` (with ``message``) when no live credential was sent — missing,
    unknown, expired, revoked or an inactive member's, all alike; 403 ``insufficient_scope``
    naming what the endpoint needs when a live credential was sent that this surface does not
    admit (a token without the scope, bound to another resource, or of another kind), so a
    client asks for the right scope instead of signing in again.
    """
    raw = bearer_token(request)
    caller = resolve(raw) if raw is not None else None
    surface = surface_for(request.path)
    if caller is None or surface is None:
        # A token was sent but is no live one: say so (unknown, expired and revoked alike),
        # not only what to send — the person holding a revoked token thought theirs was right.
        said = "The token sent is unknown, expired or revoked. " + message if raw is not None else message
        refused = json_error("unauthenticated", said, 401)
        refused["WWW-Authenticate"] = (
            'Bearer realm="brain", error="invalid_token"' if raw is not None else ('Bearer realm="brain"')
        )
        return refused
    scope = SURFACES[surface].scope
    refused = json_error("insufficient_scope", refusal_reason(SURFACES[surface], caller), 403)
    challenge = 'Bearer realm="brain", error="insufficient_scope"'
    refused["WWW-Authenticate"] = challenge + (f', scope="{scope}"' if scope else "")
    return refused
