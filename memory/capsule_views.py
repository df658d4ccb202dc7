"""``GET|HEAD /prompt-capsules/core`` and ``/prompt-capsules/projects/<id>``.

Authenticated like the memory API (personal token or memory-scoped OAuth token). A strong
ETag and ``If-None-Match`` → 304; ``Cache-Control: private, max-age=0, must-revalidate``;
``Vary: Authorization``. Other methods → 405 ``Allow: GET, HEAD``.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from brain.errors import error_body, json_error
from mcp_api.ratelimit import RateLimited, hit
from memory.api import api_member
from memory.capsules import CapsuleRefused, get_capsule
from memory.classify import MemoryInvalid


def _headers(response: HttpResponse, etag: str | None = None) -> HttpResponse:
    if etag:
        response["ETag"] = etag
    response["Cache-Control"] = "private, max-age=0, must-revalidate"
    response["Vary"] = "Authorization"
    return response


def _serve(request: HttpRequest, kind: str, project_id: str | None) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        refused = json_error("method_not_allowed", "Use GET or HEAD.", 405)
        refused["Allow"] = "GET, HEAD"
        return refused
    member = api_member(request)
    if member is None:
        refused = json_error(
            "unauthenticated", "Send a personal API token or an OAuth token with the memory scope.", 401
        )
        refused["WWW-Authenticate"] = 'Bearer realm="brain-memory"'
        return refused
    try:
        hit(principal_key=f"member:{member.pk}", rate_class="read")
    except RateLimited as limited:
        throttled = json_error("rate_limited", f"Too many requests; retry after {limited.retry_after} seconds.", 429)
        throttled["Retry-After"] = str(limited.retry_after)
        return throttled
    try:
        capsule = get_capsule(
            member=member, kind=kind, project_id=project_id, workspace=request.GET.get("workspace") or None
        )
    except MemoryInvalid as invalid:
        return _headers(json_error("invalid", str(invalid), 400))
    except CapsuleRefused as refused:
        body = error_body(refused.code, str(refused))
        body["error"]["reason"] = refused.reason
        return _headers(JsonResponse(body, status=409))
    wanted = [tag.strip() for tag in request.META.get("HTTP_IF_NONE_MATCH", "").split(",") if tag.strip()]
    if capsule.etag in wanted or "*" in wanted:
        return _headers(HttpResponse(status=304), capsule.etag)
    if request.method == "HEAD":
        return _headers(HttpResponse(content_type="application/json"), capsule.etag)
    return _headers(JsonResponse({**capsule.payload, "etag": capsule.etag}), capsule.etag)


@csrf_exempt
def core(request: HttpRequest) -> HttpResponse:
    return _serve(request, "core", None)


@csrf_exempt
def project(request: HttpRequest, project_id: str) -> HttpResponse:
    return _serve(request, "project", project_id)
