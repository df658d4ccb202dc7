"""Project-level pages that belong to no app."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from brain.errors import error_response


def sign_in_paused(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """django-axes' lockout response: 429, saying for how long, naming no account state."""
    from django.conf import settings

    minutes = max(1, int(settings.AXES_COOLOFF_TIME.total_seconds() // 60))
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    return render(request, "registration/locked_out.html", context, status=429)


def method_not_allowed(request: HttpRequest, permitted: list[str]) -> HttpResponse:
    """The 405 answer: the error page for people (JSON for programs) with ``Allow``.

    Django has no ``handler405``: its method guards answer with an empty body, which a
    browser shows as a blank page with no way on (``brain.middleware.DomainErrorMiddleware``
    answers this instead). A GET that reaches a form's action (a bookmark, the history) is
    told what the address is for.
    """
    if request.method == "GET" and permitted == ["POST"]:
        message = "This address receives a form; it has no page of its own. Go back to the form and send it again."
    else:
        message = f"This address does not take a {request.method} request."
    response = error_response(request, 405, "method_not_allowed", message)
    response["Allow"] = ", ".join(permitted)
    return response
