"""Request-scoped middleware: the request id."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBase

from brain.request_context import accept_or_new, current_request, current_request_id

logger = logging.getLogger("brain.request")


class RequestIdMiddleware:
    """Give every request an id, put it in the logs, and return it as ``x-request-id``.

    It sits first in ``MIDDLEWARE`` so that every response passes through it, including
    Django's own 400 for a disallowed host and the 500 of an unhandled exception. It must
    not call ``request.get_host()``: that raises for a disallowed host.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = accept_or_new(request.META.get("HTTP_X_REQUEST_ID"))
        request.request_id = request_id  # type: ignore[attr-defined]
        token = current_request_id.set(request_id)
        request_token = current_request.set(request)
        try:
            response = self.get_response(request)
            response["x-request-id"] = request_id
            if response.status_code >= 500:
                logger.error("%s %s -> %s", request.method, request.path, response.status_code)
            return response
        finally:
            current_request.reset(request_token)
            current_request_id.reset(token)


# No inline script, no plugins, no framing, nothing from other origins. Inline *styles* are
# allowed: the Django admin uses style attributes (our own pages use brain.css only), and CSS
# cannot run code.
# form-action is left out on purpose: browsers apply it to the redirect after the OAuth
# consent form, which goes to the client's own redirect URI (another origin or scheme).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class ContentSecurityPolicyMiddleware:
    """Send ``CONTENT_SECURITY_POLICY`` with every response that does not set its own.

    Defence in depth for the pages that render user Markdown (already sanitised): even a
    sanitiser bug cannot run script, because no inline script is ever allowed.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


class DomainErrorMiddleware:
    """The web views' translator: a refusal that escapes a view (a ``DomainError``, a missing
    row, a permission or validation error) becomes its status and safe message — the error
    page for people, the JSON error for programs — instead of a server error; so does a
    database that stopped answering (503 with ``Retry-After``). Anything else propagates to
    Django's 500 handling, logged with the request id.

    It also gives Django's method guards (``require_POST`` …) a body: their 405 is empty, a
    blank page in a browser — reached by a GET of a form's action (a bookmark, the history).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 405 and not response.streaming and not response.content:
            from brain.views import method_not_allowed

            permitted = [method.strip() for method in response.get("Allow", "").split(",") if method.strip()]
            return method_not_allowed(request, permitted)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from django.core.exceptions import PermissionDenied
        from django.http import Http404

        from brain.domain import problem_for
        from brain.errors import problem_response

        if isinstance(exception, Http404 | PermissionDenied):
            return None  # Django's own handlers (brain.errors.page_not_found / permission_denied)
        problem = problem_for(exception)
        if problem is None:
            return None
        return problem_response(request, problem)
