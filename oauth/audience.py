"""Which surface each path-routed API is, for the APIs that predate REST v1.

``brain.callers`` holds the one table of what each surface requires (credential kinds,
scope, OAuth resource); this module only maps the legacy paths onto its rows. Every route
under /api/ and /prompt-capsules/ must map to a surface, or be a REST v1 view (which
names its own) — tests/brain/test_scope_matrix.py walks the URL conf to prove it.
"""

from __future__ import annotations

from django.http import HttpRequest

from brain.callers import MCP_PATH, MEMORY_API_PATH, REST_API_PATH, caller_for
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
