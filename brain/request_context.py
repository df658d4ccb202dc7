"""The current request id, visible to every log line of that request, and who is signed in."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar
from typing import Any

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)
# The request being served (its ``user`` is read only when asked: authentication runs later
# in the middleware chain than the request id is set).
current_request: ContextVar[Any] = ContextVar("current_request", default=None)

# Accept a caller's id only if it is short and plain: it is echoed in headers and logs.
_WELL_FORMED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$")


def accept_or_new(incoming: str | None) -> str:
    """Keep a well-formed incoming ``x-request-id``; otherwise mint a uuid4."""
    if incoming and _WELL_FORMED.fullmatch(incoming):
        return incoming
    return str(uuid.uuid4())


def get_request_id() -> str | None:
    """The id of the request being served in this context, if any."""
    return current_request_id.get()


def signed_in_login() -> Any:
    """The Django user signed in to the request being served, or None (no request, anonymous)."""
    user = getattr(current_request.get(), "user", None)
    return user if user is not None and user.is_authenticated else None
