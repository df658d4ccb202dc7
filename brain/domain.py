"""The one domain-error base every service raises, and the one mapping transports translate.

Kept apart from ``brain.errors`` (which renders responses and imports the secret detector)
so the lowest modules — the secret detector itself — can raise a ``DomainError``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import psycopg
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, ValidationError
from django.db import DataError, InterfaceError, OperationalError

logger = logging.getLogger(__name__)

# How long a client is told to wait (``Retry-After``) when the database does not answer: an
# embedded restart takes seconds, a managed failover tens of seconds; clients retry, not give up.
UNAVAILABLE_RETRY_SECONDS = 10

# What a lost, refused or restarting database raises: Django's wrappers (every ORM and cursor
# call) and psycopg's own (code that holds the raw connection). Operational errors also cover
# a cancelled statement, a deadlock or a serialisation failure — all worth a retry, none a bug.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


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
    """What a transport says about a refused call.

    ``retry_after`` (seconds) is set when the call may simply be sent again later — every
    transport then sends it as ``Retry-After``. A 503 is the service being unavailable, not a
    refusal of this call: the MCP transport answers it at the HTTP level, not as a tool error.
    """

    code: str
    status: int
    message: str
    retry_after: int | None = None


PROGRAM_LIMIT_EXCEEDED = "54"  # SQLSTATE class: stack depth, statement too complex, too many columns


def _sqlstate(exc: BaseException) -> str:
    """The SQLSTATE behind a driver error (Django keeps psycopg's as the cause), or ""."""
    for error in (exc, exc.__cause__):
        state = getattr(error, "sqlstate", None)
        if isinstance(state, str):
            return state
    return ""


def past_program_limits(exc: BaseException) -> bool:
    """Whether PostgreSQL refused the statement for its program limits (SQLSTATE class 54: a
    tsvector over 1 MB, a statement too complex): psycopg files these as operational errors,
    but the database is up and every retry fails the same way."""
    return _sqlstate(exc).startswith(PROGRAM_LIMIT_EXCEEDED)


def database_unavailable(exc: BaseException) -> Problem | None:
    """503 ``unavailable`` for a database that does not answer (down, restarting, connection
    lost mid-request); 400 ``too_complex`` for a request past its program limits (SQLSTATE
    class 54), which no retry mends; None for anything else. Logged here, once per failed call, with the
    driver's first line (psycopg's messages name the server and the reason, never a value)."""
    if not isinstance(exc, DATABASE_UNAVAILABLE):
        return None
    first_line = next(iter(str(exc).splitlines()), "")
    if past_program_limits(exc):
        # The database answered: this request is beyond what it runs (a 100 KB query nested
        # the full-text parser past PostgreSQL's stack). Retrying the same request fails again.
        logger.warning("request beyond the database's limits: %s", first_line)
        return Problem("too_complex", 400, "The request is too large or complex for the database; shorten it.")
    logger.warning("database unavailable: %s: %s", type(exc).__name__, first_line)
    return Problem(
        "unavailable",
        503,
        f"The database is not answering; try again in {UNAVAILABLE_RETRY_SECONDS} seconds.",
        retry_after=UNAVAILABLE_RETRY_SECONDS,
    )


def problem_for(exc: BaseException) -> Problem | None:
    """The one mapping from what services raise to (code, status, message); None: a bug (500).

    Every transport uses it: the web views (``brain.middleware``, and ``brain.errors.server_error``
    for what escapes a middleware), the REST API's exception handler, the MCP endpoints and the
    memory API — so a database outage is the same 503 on each."""
    unavailable = database_unavailable(exc)
    if unavailable is not None:
        return unavailable
    if isinstance(exc, DomainError):
        return Problem(exc.code, exc.status, exc.safe_message)
    if isinstance(exc, ObjectDoesNotExist):
        return Problem("not_found", 404, "Not found.")
    if isinstance(exc, PermissionDenied | PermissionError):
        return Problem("forbidden", 403, str(exc) or "You may not do this.")
    if isinstance(exc, ValidationError):
        return Problem("invalid", 400, "; ".join(exc.messages))
    if _nul_in_text(exc):
        # The last line of defence: every field that reaches the database should have been
        # refused by name before; one that was not is the client's text, not a server fault.
        logger.warning("a NUL character reached a database statement")
        return Problem("invalid", 400, "The request holds a NUL character, which text here cannot contain.")
    return None


def _nul_in_text(exc: BaseException) -> bool:
    """Whether psycopg refused to send text holding a NUL (raised before the statement runs)."""
    return any(
        isinstance(error, psycopg.DataError | DataError) and "NUL (0x00)" in str(error)
        for error in (exc, exc.__cause__)
    )
