"""Vault imports and the Obsidian export on the memory REST API (``/api/memory/…``).

- ``POST import/obsidian?vault=<name>&workspace=`` — the body is a zip of an Obsidian vault
  (the vault's folder zipped, or its contents); ``vault`` defaults to the zipped folder's
  name, else ``vault``. Keep the name the same between imports: it is part of each origin.
- ``POST import/notion?workspace=`` — the body is a Notion "Markdown & CSV" export zip.
- ``GET export/obsidian`` — every memory you wrote, as a vault zip (streamed).
- ``GET imports/<id>`` — a background import: its state, progress and, once finished, its
  report or every problem.

Same authentication, rate limits and error shape as ``memory.api``; imports are in the
``upload`` rate class and, like every memory API body, at most 5 MB; the notes an import
stores count in the ``import`` class, as a JSON-lines import's records do (each is embedded;
an import of more notes than the window holds fills it). An import answers 200 with its
report, 400 ``{"error": {..., "problems": [...]}}`` naming every bad note (and nothing is
stored), or 429 with ``Retry-After`` when its notes are over the window (nothing stored).

A zip of more than ``BRAIN_IMPORT_BACKGROUND_NOTES`` notes is imported by a worker
(``memory.vault_jobs``): the answer is 202 with the import (``state`` "queued") and its
``Location``; poll ``GET imports/<id>`` until ``state`` is ``done`` (the report),
``refused`` (the problems; nothing stored) or ``failed``. While one is open, another
large import answers 409.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.urls import reverse

from brain.errors import error_body
from brain.ratelimit import RateLimited, caps, hit, throttled
from grants.models import Member
from memory.api import memory_api
from memory.classify import MemoryInvalid
from memory.models import VaultImport
from memory.vault_jobs import (
    in_background,
    run_import,
    upload_read,
    vault_import_dict,
    vault_import_get,
    vault_import_queue,
)
from memory.vaults import ImportRefused, ImportReport, obsidian_export
from memory.vaults.common import Charge

EXPORT_NAME = "brain-memories-obsidian.zip"


def _zip_body(request: HttpRequest) -> bytes:
    if not request.body:
        raise MemoryInvalid("send the zip as the request body")
    return request.body


def import_charge(member: Member) -> Charge:
    """Counts an import's notes in the member's ``import`` window (``RateLimited`` when full):
    each note is embedded, as each record of a JSON-lines import is. An import of more notes
    than the window holds counts as the whole window — it runs alone in its minute."""

    def charge(notes: int) -> None:
        hit(principal_key=f"member:{member.pk}", rate_class="import", cost=min(notes, caps()["import"]))

    return charge


OVER_WINDOW = "Too many memories imported this minute; retry after {seconds} seconds."


def _answer(run: ImportReport | ImportRefused) -> JsonResponse:
    if isinstance(run, ImportRefused):
        body = error_body("invalid", "nothing was imported")
        body["error"]["problems"] = run.problems
        return JsonResponse(body, status=400)
    return JsonResponse(run.as_dict())


def _import(request: HttpRequest, member: Member, kind: str, vault: str) -> HttpResponse:
    """Import the body's zip now (200 with the report) or in a worker (202 with the import)."""
    body = _zip_body(request)
    workspace = request.GET.get("workspace") or None
    try:
        upload = upload_read(kind, body)
        if in_background(upload):
            job = vault_import_queue(
                actor=member, upload=upload, vault=vault, workspace=workspace, charge=import_charge(member)
            )
            url = reverse("memory:api-import-job", args=[job.pk])
            response = JsonResponse({**vault_import_dict(job), "url": url}, status=202)
            response["Location"] = url
            return response
        report = run_import(actor=member, upload=upload, vault=vault, workspace=workspace, charge=import_charge(member))
    except ImportRefused as refused:
        return _answer(refused)
    except RateLimited as limited:
        return throttled(request, limited, OVER_WINDOW, api=True)
    return _answer(report)


@memory_api(("POST",), rate_class="upload")
def import_obsidian(request: HttpRequest, member: Member) -> HttpResponse:
    """Import a zipped Obsidian vault: every note checked first, then stored in one transaction."""
    return _import(request, member, VaultImport.Kind.OBSIDIAN, request.GET.get("vault") or "")


@memory_api(("POST",), rate_class="upload")
def import_notion(request: HttpRequest, member: Member) -> HttpResponse:
    """Import a Notion "Markdown & CSV" export zip (one zip, or a zip of its parts)."""
    return _import(request, member, VaultImport.Kind.NOTION, "")


@memory_api(("GET",))
def import_status(request: HttpRequest, member: Member, job_id: str) -> HttpResponse:
    """A background import of the caller's: 404 for anyone else's, as for a missing one."""
    return JsonResponse(vault_import_dict(vault_import_get(member, job_id)))


@memory_api(("GET",))
def export_obsidian(request: HttpRequest, member: Member) -> HttpResponseBase:
    """Every memory the caller wrote (both layers) as an Obsidian vault zip, streamed as written."""
    response = StreamingHttpResponse(obsidian_export(member), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{EXPORT_NAME}"'
    return response
