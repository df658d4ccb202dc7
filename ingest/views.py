"""Uploading documents and watching their extraction: web pages and the REST endpoint.

The source page reads through ``source_get_visible`` (hidden = missing = 404) and polls its
extraction status with htmx while it runs. The REST endpoint takes a personal API token.
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from brain.errors import json_error
from brain.ratelimit import RateLimited, hit, throttled
from brain.text.secrets import find
from corpus.models import Source
from corpus.selectors import source_get_visible
from grants.decorators import limited_view, member_required
from grants.models import Member, Permission
from grants.predicates import holds_under
from ingest.models import Extraction
from ingest.selectors import UPLOADS_LISTED, uploads_count, uploads_of
from ingest.services import document_ingest, extraction_retry
from ingest.storage import StorageFull
from oauth.audience import legacy_refusal, member_for


def latest_extraction(source: Source) -> Extraction | None:
    document = getattr(source, "document", None)
    return document.extractions.order_by("-created_at").first() if document is not None else None


class Uploaded(NamedTuple):
    extraction: Extraction
    # These exact bytes were uploaded before: this is that capture (its title and category as
    # they were); nothing new was stored or extracted.
    existing: bool


def _ingest_from_request(request: HttpRequest, member: Member) -> Uploaded:
    return ingest_upload(member=member, uploads=request.FILES.getlist("file"), fields=request.POST)


def ingest_upload(*, member: Member, uploads: list[Any], fields: Any) -> Uploaded:
    """Store an uploaded file (``uploads``: the request's ``file`` parts) as a capture and queue
    its extraction (web form, legacy and REST v1).

    ``fields`` holds the optional key, title, category and sensitivity. A missing, second or
    oversized file is ``ValidationError`` naming it, before any byte is read into memory.
    """
    started = timezone.now()
    if not uploads:
        raise ValidationError({"file": "choose a file to upload"})
    if len(uploads) > 1:  # one was kept and the others dropped without a word
        raise ValidationError({"file": f"upload one file at a time ({len(uploads)} were sent)"})
    upload = uploads[0]
    for name in ("key", "title", "category", "sensitivity"):
        # A multipart part sent as a file where text belongs (the REST view's data holds both).
        if name in fields and not isinstance(fields.get(name), str):
            raise ValidationError({name: f"{name} must be a text field, not a file"})
    limit = int(settings.BRAIN_INGEST_LIMITS["MAX_BYTES"])
    if upload.size is not None and upload.size > limit:  # before reading it into memory
        raise ValidationError({"file": f"the file is {upload.size:,} bytes; the limit is {limit:,}"})
    extraction = document_ingest(
        actor=member, filename=upload.name or "upload", data=upload.read(), key=fields.get("key") or None,
        title=fields.get("title") or None, category=fields.get("category") or None,
        sensitivity=fields.get("sensitivity") or "ordinary",
    )  # fmt: skip
    return Uploaded(extraction, existing=extraction.created_at < started)


@require_http_methods(["GET", "POST"])
@limited_view("upload")
@member_required
def upload(request: HttpRequest, member: Member) -> HttpResponseBase:
    problems: list[str] = []
    status = 400  # of a refusal; a full storage says 507
    if request.method == "POST":
        try:
            extraction, existing = _ingest_from_request(request, member)
            if existing:
                messages.info(
                    request,
                    "You uploaded exactly these bytes before: this is the existing capture, "
                    "nothing was stored or extracted again.",
                )
            return redirect("ingest:source", key=extraction.document.source.key)
        except ValidationError as invalid:
            problems = invalid.messages
        except PermissionDenied as denied:
            problems = [str(denied) or "You may not add captures there."]
        except StorageFull as full:
            problems, status = [full.safe_message], full.status
    # What was typed comes back on a refusal, except a field holding a secret: never echo one.
    typed = {
        name: value
        for name in ("title", "key", "category", "sensitivity")
        if (value := request.POST.get(name, "")) and not find(value)
    }
    context = {"problems": problems, "typed": typed, "may_upload": may_upload(member), "needs": UPLOAD_NEEDS}
    return render(request, "ingest/upload.html", context, status=status if problems else 200)


UPLOAD_NEEDS = (
    "Adding documents needs suggest permission on a folder under captures/ (captures/uploads/ for an upload "
    "without an id). Ask an administrator to grant it."
)


def may_upload(member: Member) -> bool:
    """Whether the upload form is worth offering: a grant somewhere under ``captures/`` (each
    save still weighs the capture's own path, category and sensitivity)."""
    return holds_under(member, Permission.SUGGEST, "captures/")


@require_GET
@vary_on_headers("HX-Request")  # page or polled fragment: a browser cache must keep them apart
@member_required
def source(request: HttpRequest, member: Member, key: str) -> HttpResponseBase:
    try:
        found = source_get_visible(principal=member, key=key)
    except Source.DoesNotExist as exc:
        raise Http404 from exc
    context: dict[str, Any] = {"source": found, "extraction": latest_extraction(found)}
    template = "ingest/_status.html" if request.headers.get("HX-Request") else "ingest/source.html"
    return render(request, template, context)


@require_GET
@vary_on_headers("HX-Request")
@member_required
def uploads(request: HttpRequest, member: Member) -> HttpResponse:
    """The member's own uploads with their extraction status, newest first (polls while any runs)."""
    rows = uploads_of(member=member)
    running = any(row.status in (Extraction.Status.QUEUED, Extraction.Status.RUNNING) for row in rows)
    template = "ingest/_uploads_table.html" if request.headers.get("HX-Request") else "ingest/uploads.html"
    # Say when the list is cut: the oldest uploads were missing without a word.
    total = uploads_count(member=member) if len(rows) == UPLOADS_LISTED else len(rows)
    context = {"rows": rows, "running": running, "total": total}
    if template == "ingest/uploads.html":  # the polled fragment needs neither
        context.update(may_upload=may_upload(member), needs=UPLOAD_NEEDS)
    return render(request, template, context)


@require_GET
@member_required
def original(request: HttpRequest, member: Member, key: str) -> HttpResponseBase:
    """The uploaded file as it was sent, for anyone who may read its capture; always a download.

    Served as an attachment of type ``application/octet-stream`` so a browser never renders
    an uploaded HTML or SVG file on our origin.
    """
    try:
        found = source_get_visible(principal=member, key=key)
    except Source.DoesNotExist as exc:
        raise Http404 from exc
    document = getattr(found, "document", None)
    if document is None or not default_storage.exists(document.storage_name):
        raise Http404
    response = FileResponse(
        default_storage.open(document.storage_name, "rb"),
        as_attachment=True,
        filename=document.filename or found.key.rsplit("/", 1)[-1],
        content_type="application/octet-stream",
    )
    return response


@require_POST
@member_required
def retry(request: HttpRequest, member: Member, key: str) -> HttpResponseBase:
    try:
        found = source_get_visible(principal=member, key=key)
    except Source.DoesNotExist as exc:
        raise Http404 from exc
    extraction = latest_extraction(found)
    if extraction is None or extraction.document.uploaded_by_id != member.pk:
        raise Http404
    with contextlib.suppress(ValidationError):  # not failed (any more): the page shows its state
        extraction_retry(actor=member, extraction_id=extraction.pk)
    return redirect("ingest:source", key=key)


def extraction_status(extraction: Extraction) -> dict[str, Any]:
    return {
        "id": extraction.pk, "status": extraction.status, "error": extraction.error, "extractor": extraction.extractor,
        "extractor_version": extraction.extractor_version, "char_count": extraction.char_count,
        "pages": extraction.pages, "masked": extraction.masked, "region": extraction.region,
        "attempts": extraction.attempts, "duration_ms": extraction.duration_ms,
    }  # fmt: skip


@csrf_exempt
def api_sources(request: HttpRequest) -> HttpResponse:
    """``POST /api/sources`` (multipart: file, key?, title?, category?, sensitivity?) → 202 and where to watch."""
    if request.method != "POST":
        refused = json_error("method_not_allowed", "Use POST.", 405)
        refused["Allow"] = "POST"
        return refused
    member = member_for(request)
    if member is None:
        return legacy_refusal(request, "Send a personal API token with the sources:write scope.")
    try:
        hit(principal_key=f"member:{member.pk}", rate_class="upload")
    except RateLimited as limited:
        return throttled(request, limited, "Too many uploads; retry after {seconds} seconds.", api=True)
    try:
        extraction = _ingest_from_request(request, member).extraction
    except ValidationError as invalid:
        return json_error("invalid", "; ".join(invalid.messages), 400)
    except PermissionDenied as denied:
        return json_error("forbidden", str(denied) or "You may not add captures there.", 403)
    except StorageFull as full:
        return json_error(full.code, full.safe_message, full.status)
    key = extraction.document.source.key
    body = {"key": key, "citation": f"capture:{key}", "extraction": extraction_status(extraction),
            "status_url": reverse("ingest:api-source", kwargs={"key": key})}  # fmt: skip
    return JsonResponse(body, status=202)


@csrf_exempt
@require_GET
def api_source(request: HttpRequest, key: str) -> HttpResponse:
    member = member_for(request)
    if member is None:
        return legacy_refusal(request, "Send a personal API token with the sources:write scope.")
    try:
        found = source_get_visible(principal=member, key=key)
    except Source.DoesNotExist:
        return json_error("not_found", "Not found.", 404)
    extraction = latest_extraction(found)
    return JsonResponse(
        {"key": found.key, "title": found.title, "extraction": extraction_status(extraction) if extraction else None}
    )
