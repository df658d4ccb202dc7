"""The request-input layer: hostile input is refused before any view, parser or query sees it.

Two pieces, one rule each:

- ``HostileInputMiddleware`` refuses a request whose path, query string or form fields hold
  a NUL or another C0 control character (PostgreSQL text cannot hold NUL, and no identifier
  of ours contains a control character), and a body whose declared size is over the limit
  for its kind — 413, never Django's generic 400, and before a byte of it is read.
- ``parse_json`` is the one JSON parser for request bodies (REST's too, through
  ``brain.rest_parsers.StrictJSONParser``): nesting is bounded (the C
  parser's RecursionError, then one iterative walk), NaN/Infinity and numbers that overflow
  to infinity are refused, and text no database can store — a NUL, or a lone UTF-16
  surrogate (``"\ud800"`` is valid JSON but no character) — is refused naming where it is.

Both raise or answer ``InputRefused``'s message, which names what is wrong and never echoes
the input.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from brain.errors import error_response, shown
from brain.text.secrets import refused, unstorable

MAX_JSON_DEPTH = 64
# C0 controls and DEL, except tab, line feed and carriage return (multi-line form fields).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_IN_IDENTIFIER = re.compile(r"[\x00-\x1f\x7f]")


class InputRefused(ValueError):
    """The request input is refused; ``status`` is 400 or 413 and the message names the problem."""

    def __init__(self, message: str, *, status: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


# --------------------------------------------------------------------------- JSON


# Possessive quantifiers: a string runs to its closing quote or to the end of the text, and is
# never re-scanned from a later quote (an unterminated one made the plain form quadratic).
_BRACKET_OR_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]')


def nested_deeper_than(raw: str, limit: int) -> bool:
    """Whether ``[``/``{`` nest more than ``limit`` deep outside quoted strings, without recursion.

    For text a recursive parser is about to read (frontmatter YAML). Stops at the first level
    past the limit, and skips the scan when there are not even ``limit`` opening brackets.
    """
    if raw.count("[") + raw.count("{") <= limit:
        return False
    depth = 0
    for match in _BRACKET_OR_STRING.finditer(raw):
        lexeme = match.group(0)
        if lexeme in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif lexeme in ("]", "}"):
            depth -= 1
    return False


def _refuse_constant(name: str) -> Any:
    raise InputRefused(f"the JSON body holds {name}, which is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputRefused("the JSON body holds a number too large to represent")
    return value


# Where an item sits in a body: its parent's place and its own step (".key" or "[3]"), so a
# location is built only when something is refused. Writing every child's full location up
# front repeated a long key once per list item: a 60 KB body asked for 450 MB.
_Place = tuple["_Place | None", str]
MAX_LOCATION = 200  # characters of a location a refusal repeats


def _location(place: _Place | None) -> str:
    steps: list[str] = []
    while place is not None:
        place, step = place
        steps.append(step)
    text = "".join(reversed(steps)).removeprefix(".")
    return text if len(text) <= MAX_LOCATION else text[: MAX_LOCATION - 1] + "…"


def _walk(value: Any, where: str, *, max_depth: int | None, check_text: bool) -> None:
    """One iterative pass over a parsed body: nesting within ``max_depth``, and (``check_text``)
    no string or key holding text that cannot be stored. Memory is one stack entry per
    pending item, whatever the keys' lengths."""
    stack: list[tuple[Any, _Place | None, int]] = [(value, (None, where) if where else None, 1)]
    while stack:
        item, place, depth = stack.pop()
        if isinstance(item, str):
            problem = unstorable(item) if check_text else None
            if problem:
                raise InputRefused(f"{_location(place)} contains {problem}")
            continue
        if not isinstance(item, dict | list):
            continue
        if max_depth is not None and depth > max_depth:
            raise InputRefused(f"the JSON body is nested more than {max_depth} levels deep")
        if isinstance(item, dict):
            for key, child in item.items():
                problem = unstorable(key) if check_text else None
                if problem:
                    raise InputRefused(f"a key in {_location(place)} contains {problem}")
                stack.append((child, (place, f".{key}"), depth + 1))
        else:
            stack.extend((child, (place, f"[{index}]"), depth + 1) for index, child in enumerate(item))


def refuse_unstorable(value: Any, where: str) -> None:
    """``InputRefused`` naming the first string (or key) inside ``value`` holding a NUL or a
    lone surrogate."""
    _walk(value, where, max_depth=None, check_text=True)


def parse_json(body: bytes | str, *, max_depth: int = MAX_JSON_DEPTH, where: str = "", check_text: bool = True) -> Any:
    """Parse a request body; ``InputRefused`` names what is wrong (never a traceback).

    The C parser runs first: it fails fast on broken JSON and raises RecursionError on deep
    nesting long before the stack is at risk; one iterative walk then bounds the depth and
    finds NULs and lone surrogates. ``check_text=False`` leaves that check to the caller
    (``refuse_unstorable``), which can then answer in its own protocol — MCP names the
    parameter in a JSON-RPC error.
    """
    try:
        raw = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError:
        raise InputRefused("the body is not UTF-8 text") from None
    try:
        value = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except InputRefused:
        raise
    except RecursionError:
        raise InputRefused(f"the JSON body is nested more than {max_depth} levels deep") from None
    except ValueError:
        raise InputRefused("the body is not valid JSON", code="not_json") from None
    _walk(value, where or "the body", max_depth=max_depth, check_text=check_text)
    return value


def typed_back(data: Any) -> dict[str, str]:
    """What a refused form may show again: each field as typed, except any value holding a
    secret or text that cannot be stored — a refused secret is never echoed into the page."""
    shown: dict[str, str] = {}
    for name in data:
        value = str(data.get(name, ""))
        if not refused(value):
            shown[name] = value
    return shown


# --------------------------------------------------------------------------- middleware


def _declared_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


GENERAL_BODY_LIMIT = 2_621_440  # 2.5 MB, Django's own default for form and JSON bodies
# Routes whose bodies may be larger than the general limit; 0: the route answers its own 413
# in its own protocol's shape (MCP's JSON-RPC errors, ``mcp_api.views``).
_ROUTE_BODY_LIMITS = (
    ("/api/mcp", 0),
    ("/api/build/mcp", 0),
    ("/api/memory/import", 5 * 1024 * 1024),
    ("/api/v1/memories/import", 5 * 1024 * 1024),
    ("/api/memory/calendar/import", 5 * 1024 * 1024),  # the ICS file is the body (memory.calendars.MAX_BYTES)
)


# The routes that take file uploads (multipart bodies up to the upload limits).
UPLOAD_ROUTES = (
    "/sources/upload",
    "/api/sources",
    "/builds/import",
    "/api/v1/uploads",
    "/api/v1/builds/import",
    "/memory/import/",  # an Obsidian vault or Notion export zip (memory.vault_views)
    "/memory/calendars/",  # an .ics file (memory.calendar_views; 5 MB checked there)
)


def body_limit(request: HttpRequest) -> int:
    """The largest body a request to this route, of this content type, may declare (0: not checked here)."""
    if request.META.get("CONTENT_TYPE", "").startswith("multipart/form-data") and request.path in UPLOAD_ROUTES:
        # Uploads: the largest document or build archive, plus room for the form around it.
        archive = int(settings.BRAIN_BUILD_DRIVER.get("MAX_ZIP_BYTES", 0))
        return max(int(settings.BRAIN_INGEST_LIMITS["MAX_BYTES"]), archive) + 1024 * 1024
    for prefix, limit in _ROUTE_BODY_LIMITS:
        if request.path == prefix or request.path.startswith(prefix + "/"):
            return limit
    return GENERAL_BODY_LIMIT


_View = TypeVar("_View", bound=Callable[..., Any])


class HostileInputMiddleware:
    """Refuse control characters in the path, query and form fields, and oversized bodies.

    Sits right after the request-id middleware, so a refusal carries the request id and is
    answered in the client's format (JSON for programs, the error page for people).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        try:
            self._check(request)
        except InputRefused as refused:
            return error_response(request, refused.status, refused.code, str(refused))
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: Callable[..., Any], *args: Any) -> HttpResponseBase | None:
        """Form fields, once the view is known: a view marked ``reads_its_own_form`` answers
        control characters in its own terms (Slack's commands: an ephemeral reply Slack shows,
        where this refusal was an error page Slack showed as a failure)."""
        content_type = request.META.get("CONTENT_TYPE", "")
        # Only url-encoded forms are read here: parsing a multipart body would consume the
        # stream, and a view that reads ``request.body`` (MCP, the memory API) would then fail.
        # Multipart text fields reach the services, which refuse NUL on every write.
        if request.method != "POST" or not content_type.startswith("application/x-www-form-urlencoded"):
            return None
        if getattr(view, "reads_its_own_form", False):
            return None
        for name, values in request.POST.lists():
            if _CONTROL.search(name) or any(_CONTROL.search(value) for value in values):
                message = f"the form field {shown(name)!r} contains a control character"
                return error_response(request, 400, "bad_request", message)
        return None

    def _check(self, request: HttpRequest) -> None:
        if _CONTROL_IN_IDENTIFIER.search(request.path_info):
            raise InputRefused("the request path contains a control character")
        query = request.META.get("QUERY_STRING", "")
        if query and _CONTROL_IN_IDENTIFIER.search(unquote_to_bytes(query).decode("latin-1")):
            raise InputRefused("the query string contains a control character")
        length = _declared_length(request)
        if length is None:
            raise InputRefused("the Content-Length header is not a number")
        limit = body_limit(request)
        if limit and length > limit:
            raise InputRefused(
                f"the request body is {length:,} bytes; the limit here is {limit:,}",
                status=413,
                code="payload_too_large",
            )


def reads_its_own_form(view: _View) -> _View:
    """Mark ``view`` as checking its own form fields for control characters (see
    ``HostileInputMiddleware.process_view``); the path, query and body size are still checked."""
    view.reads_its_own_form = True  # type: ignore[attr-defined]
    return view
