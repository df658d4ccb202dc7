"""Error responses that never leak.

JSON endpoints answer ``{"error": {"code", "message", "request_id"}}``; HTML pages get a
plain template. Neither ever carries a stack, SQL, a file path or an internal id.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from pydantic import ValidationError as ArgsInvalid
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import exception_handler

from brain.domain import Problem, problem_for
from brain.request_context import get_request_id
from brain.text.secrets import redact

logger = logging.getLogger(__name__)


# Paths whose clients are programs: they always get JSON errors.
JSON_PREFIXES = ("/api/", "/healthz", "/oauth/", "/.well-known/", "/prompt-capsules/")


MAX_NAME_SHOWN = 100  # characters of a caller's name for something echoed in an error
MAX_PROBLEMS_SHOWN = 10  # wrong arguments listed in one error
# What a mistyped argument or parameter name looks like (ours are lower_snake_case).
_ARGUMENT_NAME = re.compile(r"[a-z_][a-z0-9_]{0,31}")


def shown(name: object) -> str:
    """A caller's name for something, echoed short and redacted: redacted *before* it is cut,
    or a key straddling the cut was half shown where the detector no longer knew it (a
    megabyte of name was once echoed whole)."""
    text = redact(str(name)[: MAX_NAME_SHOWN * 40])
    return text if len(text) <= MAX_NAME_SHOWN else f"{text[:MAX_NAME_SHOWN]}…"


def unknown_name(name: object) -> str:
    """A name the caller sent that we do not know (an argument, a query parameter): echoed
    when it reads as a mistyped name of ours, otherwise not at all — a key glued to a word
    ("keyAKIA…") is no shape the secret detector reads, and need not come back to be useful."""
    text = str(name)
    return text if _ARGUMENT_NAME.fullmatch(text) else "(a name that is not one of ours)"


def unknown_parameters(names: list[str]) -> str:
    """The refusal of query parameters an endpoint does not read: the first ten, each through
    ``unknown_name``."""
    return f"Unknown query parameter(s): {', '.join(unknown_name(name) for name in names[:MAX_PROBLEMS_SHOWN])}."


def argument_problems(invalid: ArgsInvalid, *, whole: str = "arguments") -> list[tuple[str, str]]:
    """Each wrong argument of a pydantic refusal as (where, what), for an error message.

    Unknown names pass ``unknown_name``, every other part of a location ``shown``; at most
    ``MAX_PROBLEMS_SHOWN`` are listed (20,000 unknown names were each listed back)."""
    problems: list[tuple[str, str]] = []
    items = invalid.errors()
    for item in items[:MAX_PROBLEMS_SHOWN]:
        parts = [shown(part) for part in item["loc"]]
        if item["type"] == "extra_forbidden" and parts:
            parts[-1] = unknown_name(item["loc"][-1])
        problems.append((".".join(parts) or whole, redact(item["msg"])))
    if len(items) > MAX_PROBLEMS_SHOWN:
        problems.append((whole, f"and {len(items) - MAX_PROBLEMS_SHOWN} more problems"))
    return problems


def error_body(code: str, message: str) -> dict[str, Any]:
    """The one error shape of every JSON endpoint; the message passes the secret detector."""
    return {"error": {"code": code, "message": redact(message), "request_id": get_request_id()}}


def json_error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status)


def wants_json(request: HttpRequest) -> bool:
    if request.path.startswith(JSON_PREFIXES):
        return True
    accept = request.META.get("HTTP_ACCEPT", "")
    return "application/json" in accept and "text/html" not in accept


def error_response(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    """An error answer in the shape the client expects: JSON for programs, the error page for people."""
    return _respond(request, status, code, message)


def _respond(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    if wants_json(request):
        return json_error(code, message, status)
    return render(
        request,
        "error.html",
        {"status": status, "message": redact(message), "request_id": get_request_id()},
        status=status,
    )


def problem_response(request: HttpRequest, problem: Problem, *, api: bool = False) -> HttpResponse:
    """A ``Problem`` in the shape the client expects (``api``: always JSON), with ``Retry-After``
    when it has one.

    The 503 page for people is rendered without the request: the context processors would
    load the session and the user, which live in the database that is not answering.
    """
    if problem.status == 503 and not (api or wants_json(request)):
        context = {"message": redact(problem.message), "request_id": get_request_id()}
        response = HttpResponse(render_to_string("unavailable.html", context), status=503)
    elif api:
        response = json_error(problem.code, problem.message, problem.status)
    else:
        response = _respond(request, problem.status, problem.code, problem.message)
    if problem.retry_after is not None:
        response["Retry-After"] = str(problem.retry_after)
    return response


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):
        # A body without a declared length that grew past the limit while being read.
        return _respond(request, 413, "payload_too_large", "The request body is over the limit.")
    return _respond(request, 400, "bad_request", "The request could not be understood.")


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _respond(request, 403, "forbidden", "You may not do this.")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _respond(request, 404, "not_found", "Not found.")


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's handler500, also reached by what escapes a middleware (the session or the user
    loaded while the database is down): a mapped exception gets its answer (the 503), the rest
    the 500 with the request id. Django calls it while handling the exception."""
    handling = sys.exc_info()[1]
    problem = problem_for(handling) if handling is not None else None
    if problem is not None:
        return problem_response(request, problem)
    return _respond(request, 500, "internal_error", "Something went wrong on our side. Quote the request id.")


def drf_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """REST errors in the project's shape: domain refusals through ``problem_for``, DRF's own
    (authentication, throttling, parsing) by their status; anything else falls through to
    ``server_error`` (a 500 with the request id, logged)."""
    if isinstance(exc, Http404):
        # DRF converts it too, but inside its handler, after the code and message are read here:
        # a view's Http404 answered "error / The request was not accepted." instead of not_found.
        exc = NotFound()
    problem = problem_for(exc)
    if problem is not None:
        response_for_problem = Response(error_body(problem.code, problem.message), status=problem.status)
        retry_after = problem.retry_after if problem.retry_after is not None else getattr(exc, "retry_after", None)
        if retry_after is not None:
            response_for_problem["Retry-After"] = str(retry_after)
        return response_for_problem
    response = exception_handler(exc, context)
    if response is None:
        return None
    detail = getattr(exc, "detail", None)
    # A code given where it was raised (e.g. insufficient_scope) wins over the class's default.
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    message = detail if isinstance(detail, str) else "The request was not accepted."
    if isinstance(detail, dict | list):
        # Field validation: name the fields, keep DRF's messages (they contain no internals).
        response.data = {**error_body(str(code), message), "fields": detail}
    else:
        response.data = error_body(str(code), str(message))
    return response
