"""Vault imports and the Obsidian export on the memory REST API (``/api/memory/…``).

- ``POST import/obsidian?vault=<name>&workspace=`` — the body is a zip of an Obsidian vault
  (the vault's folder zipped, or its contents); ``vault`` defaults to the zipped folder's
  name, else ``vault``. Keep the name the same between imports: it is part of each origin.
- ``POST import/notion?workspace=`` — the body is a Notion "Markdown & CSV" export zip.
- ``GET export/obsidian`` — every memory you wrote, as a vault zip (streamed).

Same authentication, rate limits and error shape as ``memory.api``; imports are in the
``upload`` rate class and, like every memory API body, at most 5 MB. An import answers 200
with its report, or 400 ``{"error": {..., "problems": [...]}}`` naming every bad note (and
nothing is stored).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse

from brain.errors import error_body
from grants.models import Member
from memory.api import memory_api
from memory.classify import MemoryInvalid
from memory.vaults import ImportRefused, ImportReport, notion_import, obsidian_export, obsidian_import
from memory.vaults.obsidian import vault_files_from_zip

EXPORT_NAME = "brain-memories-obsidian.zip"


def _zip_body(request: HttpRequest) -> bytes:
    if not request.body:
        raise MemoryInvalid("send the zip as the request body")
    return request.body


def _answer(run: ImportReport | ImportRefused) -> JsonResponse:
    if isinstance(run, ImportRefused):
        body = error_body("invalid", "nothing was imported")
        body["error"]["problems"] = run.problems
        return JsonResponse(body, status=400)
    return JsonResponse(run.as_dict())


@memory_api(("POST",), rate_class="upload")
def import_obsidian(request: HttpRequest, member: Member) -> HttpResponse:
    """Import a zipped Obsidian vault: every note checked first, then stored in one transaction."""
    try:
        files, folder = vault_files_from_zip(_zip_body(request))
        report = obsidian_import(
            actor=member, files=files, vault=request.GET.get("vault") or folder or "vault",
            workspace=request.GET.get("workspace") or None,
        )  # fmt: skip
    except ImportRefused as refused:
        return _answer(refused)
    return _answer(report)


@memory_api(("POST",), rate_class="upload")
def import_notion(request: HttpRequest, member: Member) -> HttpResponse:
    """Import a Notion "Markdown & CSV" export zip (one zip, or a zip of its parts)."""
    try:
        report = notion_import(
            actor=member, zip_bytes=_zip_body(request), workspace=request.GET.get("workspace") or None
        )
    except ImportRefused as refused:
        return _answer(refused)
    return _answer(report)


@memory_api(("GET",))
def export_obsidian(request: HttpRequest, member: Member) -> HttpResponseBase:
    """Every memory the caller wrote (both layers) as an Obsidian vault zip, streamed as written."""
    response = StreamingHttpResponse(obsidian_export(member), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{EXPORT_NAME}"'
    return response
