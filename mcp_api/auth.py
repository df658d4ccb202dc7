"""Who is calling an MCP endpoint: ``brain.callers`` with the MCP surfaces' rows.

Tokens are read from the ``Authorization: Bearer`` header only. A missing or invalid
credential gets one 401 answer whatever the reason.
"""

from __future__ import annotations

from django.http import HttpRequest

from brain.callers import Caller, caller_for


def build_caller(request: HttpRequest) -> Caller | None:
    """The caller behind a build credential (its requester's grants, bound to its build), or None."""
    return caller_for(request, "mcp.build")


def person_caller(request: HttpRequest) -> Caller | None:
    """The person behind an OAuth access token bound to the MCP resource, or a question credential.

    The token must be unexpired, bound (RFC 8707) to this deployment's MCP resource, and
    belong to a user who is an active member *now*: suspending a member stops every app
    they connected on its next request. Scopes come from the token; the principal's own
    grants decide what any tool can see.
    """
    return caller_for(request, "mcp.person")
