"""The one domain-error base every service raises, and the one mapping transports translate.

Kept apart from ``brain.errors`` (which renders responses and imports the secret detector)
so the lowest modules — the secret detector itself — can raise a ``DomainError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, ValidationError


class DomainError(Exception):
    """A refusal a service raises for its caller: a stable ``code``, an HTTP ``status`` and a
    message safe to show (it names what is wrong, never internals or the refused value).

    Subclasses set ``code``/``status``; each transport translates them once: the REST API's
    exception handler, the MCP dispatcher and the legacy JSON views through ``problem_for``.
    """

    code: ClassVar[str] = "invalid"
    status: ClassVar[int] = 400

    @property
    def safe_message(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Problem:
    """What a transport says about a refused call."""

    code: str
    status: int
    message: str


def problem_for(exc: BaseException) -> Problem | None:
    """The one mapping from what services raise to (code, status, message); None: a bug (500)."""
    if isinstance(exc, DomainError):
        return Problem(exc.code, exc.status, exc.safe_message)
    if isinstance(exc, ObjectDoesNotExist):
        return Problem("not_found", 404, "Not found.")
    if isinstance(exc, PermissionDenied | PermissionError):
        return Problem("forbidden", 403, str(exc) or "You may not do this.")
    if isinstance(exc, ValidationError):
        return Problem("invalid", 400, "; ".join(exc.messages))
    return None
