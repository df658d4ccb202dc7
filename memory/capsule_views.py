"""``GET|HEAD /prompt-capsules/core`` and ``/prompt-capsules/projects/<id>``.

Authenticated like the memory API (personal token or memory-scoped OAuth token). A strong
ETag and ``If-None-Match`` → 304; ``Cache-Control: private, max-age=0, must-revalidate``;
``Vary: Authorization``. Other methods → 405 ``Allow: GET, HEAD``.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from brain.errors import error_body, json_error
from grants.models import Member
from memory.api import memory_api
from memory.capsules import CapsuleRefused, get_capsule
from memory.classify import MemoryInvalid


def _headers(response: HttpResponse, etag: str | None = None) -> HttpResponse:
    if etag:
        response["ETag"] = etag
    response["Cache-Control"] = "private, max-age=0, must-revalidate"
    response["Vary"] = "Authorization"
    return response


def _serve(request: HttpRequest, member: Member, kind: str, project_id: str | None) -> HttpResponse:
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


# Authentication, the read rate limit and the 405 come from the memory API's decorator.
@memory_api(("GET", "HEAD"))
def core(request: HttpRequest, member: Member) -> HttpResponse:
    return _serve(request, member, "core", None)


@memory_api(("GET", "HEAD"))
def project(request: HttpRequest, member: Member, project_id: str) -> HttpResponse:
    return _serve(request, member, "project", project_id)
