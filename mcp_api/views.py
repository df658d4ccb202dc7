"""MCP over Streamable HTTP, JSON only, stateless: one POST is one JSON-RPC message.

Transport rules (shared by every MCP endpoint): POST only (GET/DELETE → 405 with
``Allow: POST``); a foreign ``Origin`` → 403; ``MCP-Protocol-Version`` absent → 2025-06-18,
supported → echoed on every response (errors included), unsupported → 400 listing the
supported ones; notifications → 202; every response carries ``x-request-id``. Over a rate
limit → 429, the database not answering → 503, both a JSON-RPC error with ``Retry-After``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from brain.callers import bearer_token
from brain.domain import problem_for
from brain.inputs import InputRefused, parse_json
from brain.ratelimit import RateLimited
from mcp_api.auth import build_caller, person_caller
from mcp_api.base import BATCH_WAIT_SECONDS, Caller, wait_deadline
from mcp_api.dispatch import DEFAULT_VERSION, INVALID_REQUEST, PARSE_ERROR, SUPPORTED_VERSIONS, dispatch, echo_id, error
from oauth.config import MCP_PATH

MAX_BODY_BYTES = 1024 * 1024
RATE_LIMITED = -32029  # implementation-defined server error range
UNAVAILABLE = -32053  # likewise: the service is unavailable (HTTP 503), retry later


def _json(body: dict[str, object] | list[dict[str, object]], status: int, version: str) -> JsonResponse:
    response = JsonResponse(body, status=status, safe=isinstance(body, dict))
    response["MCP-Protocol-Version"] = version
    response["Cache-Control"] = "no-store"
    return response


# JSON-RPC batches exist in MCP 2025-03-26 only (2025-06-18 removed them); a client of that
# version sends no MCP-Protocol-Version header, so a batch without one is read as such.
BATCH_VERSION = "2025-03-26"


def _accepted() -> HttpResponse:
    """202 with no body, and so no Content-Type (Django's default said text/html)."""
    accepted = HttpResponse(status=202)
    del accepted["Content-Type"]
    return accepted


MAX_BATCH = 20


def _batch(messages: list[object], caller: Caller, version: str) -> JsonResponse | HttpResponse:
    """Each message of a 2025-03-26 batch answered in order: a JSON array of the answers, or 202
    when it held only notifications. A full rate window answers that message alone; a database
    that does not answer is the whole batch's 503."""
    if not 1 <= len(messages) <= MAX_BATCH:
        return _json(error(None, INVALID_REQUEST, f"A batch holds 1 to {MAX_BATCH} messages"), 400, version)
    answers: list[dict[str, object]] = []
    budget = wait_deadline.set(time.monotonic() + BATCH_WAIT_SECONDS)
    try:
        return _batch_answers(messages, answers, caller, version)
    finally:
        wait_deadline.reset(budget)


def _batch_answers(
    messages: list[object], answers: list[dict[str, object]], caller: Caller, version: str
) -> JsonResponse | HttpResponse:
    for message in messages:
        try:
            answer = dispatch(message, caller, version)
        except RateLimited as limited:
            answer = _rate_limited(echo_id(message), limited)
        except Exception as failure:
            unavailable = _unavailable(failure, None, version)
            if unavailable is None:
                raise
            return unavailable
        if answer is not None:
            answers.append(answer)
    if not answers:
        accepted = _accepted()
        accepted["MCP-Protocol-Version"] = version
        return accepted
    return _json(answers, 200, version)


def _rate_limited(message_id: object, limited: RateLimited) -> dict[str, object]:
    wait = limited.retry_after
    return error(message_id, RATE_LIMITED, f"Rate limit exceeded; retry after {wait} seconds.", {"retry_after": wait})


def _unavailable(failure: Exception, message_id: object, version: str) -> JsonResponse | None:
    """The 503 for an exception ``problem_for`` maps to one (the database not answering), or None."""
    problem = problem_for(failure)
    if problem is None or problem.status != 503:
        return None
    body = error(message_id, UNAVAILABLE, problem.message, {"retry_after": problem.retry_after})
    response = _json(body, 503, version)
    if problem.retry_after is not None:
        response["Retry-After"] = str(problem.retry_after)
    return response


def _origin_allowed(request: HttpRequest) -> bool:
    origin = request.META.get("HTTP_ORIGIN")
    if not origin:
        return True  # non-browser clients send none
    ours = urlsplit(settings.BRAIN_BASE_URL)
    try:
        theirs = urlsplit(origin)
    except ValueError:  # "https://[x": not an origin at all, so not ours (was an unauthenticated 500)
        return False
    return (theirs.scheme, theirs.netloc) == (ours.scheme, ours.netloc)


def _build_challenge(request: HttpRequest) -> str:
    # RFC 6750 §3.1: no error code when the request carried no credential at all.
    if bearer_token(request) is None:
        return 'Bearer realm="brain-build"'
    return 'Bearer realm="brain-build", error="invalid_token"'


def _oauth_challenge(request: HttpRequest) -> str:
    """RFC 9728 §5.1: point the client at the protected-resource metadata to start OAuth."""
    metadata = f"{settings.BRAIN_BASE_URL}/.well-known/oauth-protected-resource{MCP_PATH}"
    if bearer_token(request) is None:
        return f'Bearer resource_metadata="{metadata}"'
    return f'Bearer error="invalid_token", resource_metadata="{metadata}"'


def _endpoint(
    authenticate: Callable[[HttpRequest], Caller | None], challenge: Callable[[HttpRequest], str]
) -> Callable[[HttpRequest], HttpResponse]:
    @csrf_exempt
    def view(request: HttpRequest) -> HttpResponse:
        version = request.META.get("HTTP_MCP_PROTOCOL_VERSION") or DEFAULT_VERSION
        if request.method != "POST":
            response = _json(
                error(None, INVALID_REQUEST, "Use POST: this endpoint speaks JSON-RPC over Streamable HTTP (no SSE)."),
                405,
                DEFAULT_VERSION if version not in SUPPORTED_VERSIONS else version,
            )
            response["Allow"] = "POST"
            return response
        if version not in SUPPORTED_VERSIONS:
            supported = ", ".join(SUPPORTED_VERSIONS)
            body = error(
                None, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version; supported: {supported}",
                {"supported": list(SUPPORTED_VERSIONS)},
            )  # fmt: skip
            return _json(body, 400, DEFAULT_VERSION)
        if not _origin_allowed(request):
            return _json(error(None, INVALID_REQUEST, "Origin not allowed"), 403, version)
        try:
            caller = authenticate(request)  # a database read
        except Exception as failure:
            unavailable = _unavailable(failure, None, version)
            if unavailable is None:
                raise
            return unavailable
        if caller is None:
            refused = _json(error(None, INVALID_REQUEST, "A valid bearer credential is required."), 401, version)
            refused["WWW-Authenticate"] = challenge(request)
            return refused
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if not (declared.isascii() and declared.isdigit()):
            return _json(error(None, INVALID_REQUEST, "Content-Length must be a whole number of bytes"), 400, version)
        # The declared size first: reading an oversized body is what the limit is there to avoid.
        if int(declared) > MAX_BODY_BYTES or len(request.body) > MAX_BODY_BYTES:
            too_large = f"Request body too large: the limit is {MAX_BODY_BYTES:,} bytes"
            return _json(error(None, INVALID_REQUEST, too_large), 413, version)
        try:
            message = parse_json(request.body, check_text=False)
        except InputRefused as refused:
            return _json(error(None, PARSE_ERROR, f"Parse error: {refused}"), 400, version)
        if isinstance(message, list):
            if request.META.get("HTTP_MCP_PROTOCOL_VERSION", BATCH_VERSION) != BATCH_VERSION:
                not_here = f"Batches are not part of MCP {version}: send one message per POST"
                return _json(error(None, INVALID_REQUEST, not_here), 400, version)
            return _batch(message, caller, version)
        message_id = echo_id(message)
        try:
            answer = dispatch(message, caller, version)
        except RateLimited as limited:
            throttled = _json(_rate_limited(message_id, limited), 429, version)
            throttled["Retry-After"] = str(limited.retry_after)
            return throttled
        except Exception as failure:
            unavailable = _unavailable(failure, message_id, version)
            if unavailable is None:
                raise
            return unavailable
        if answer is None:
            accepted = _accepted()
            accepted["MCP-Protocol-Version"] = version
            return accepted
        if isinstance(message, dict) and message.get("method") == "initialize" and "result" in answer:
            version = answer["result"]["protocolVersion"]  # the version now in use, as the body says
        if isinstance(message, dict) and "id" not in message and "error" in answer:
            # A notification that cannot be accepted: an HTTP error, its body an error with no
            # id (MCP 2025-06-18, Streamable HTTP) — a 200 reads as the answer to a request.
            return _json(answer, 400, version)
        return _json(answer, 200, version)

    return view


build_mcp = _endpoint(build_caller, _build_challenge)
person_mcp = _endpoint(person_caller, _oauth_challenge)
