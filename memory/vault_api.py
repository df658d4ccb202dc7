"""Vault imports and the Obsidian export on the memory REST API (``/api/memory/…``).

- ``POST import/obsidian?vault=<name>&workspace=`` — the body is a zip of an Obsidian vault
  (the vault's folder zipped, or its contents); ``vault`` defaults to the zipped folder's
  name, else ``vault``. Keep the name the same between imports: it is part of each origin.
- ``POST import/notion?workspace=`` — the body is a Notion "Markdown & CSV" export zip.
- ``GET export/obsidian`` — every memory you wrote, as a vault zip (streamed).

Same authentication, rate limits and error shape as ``memory.api``; imports are in the
``upload`` rate class and, like every memory API body, at most 5 MB; the notes an import
stores count in the ``import`` class, as a JSON-lines import's records do (each is embedded;
an import of more notes than the window holds fills it). An import answers 200 with its
report, 400 ``{"error": {..., "problems": [...]}}`` naming every bad note (and nothing is
stored), or 429 with ``Retry-After`` when its notes are over the window (nothing stored).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse

from brain.errors import error_body
from brain.ratelimit import RateLimited, caps, hit, throttled
from grants.models import Member
from memory.api import memory_api
from memory.classify import MemoryInvalid
from memory.vaults import ImportRefused, ImportReport, notion_import, obsidian_export, obsidian_import
from memory.vaults.common import Charge
from memory.vaults.obsidian import vault_files_from_zip

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


@memory_api(("POST",), rate_class="upload")
def import_obsidian(request: HttpRequest, member: Member) -> HttpResponse:
    """Import a zipped Obsidian vault: every note checked first, then stored in one transaction."""
    try:
        files, folder = vault_files_from_zip(_zip_body(request))
        report = obsidian_import(
            actor=member, files=files, vault=request.GET.get("vault") or folder or "vault",
            workspace=request.GET.get("workspace") or None, charge=import_charge(member),
        )  # fmt: skip
    except ImportRefused as refused:
        return _answer(refused)
    except RateLimited as limited:
        return throttled(request, limited, OVER_WINDOW, api=True)
    return _answer(report)


@memory_api(("POST",), rate_class="upload")
def import_notion(request: HttpRequest, member: Member) -> HttpResponse:
    """Import a Notion "Markdown & CSV" export zip (one zip, or a zip of its parts)."""
    try:
        report = notion_import(
            actor=member, zip_bytes=_zip_body(request), workspace=request.GET.get("workspace") or None,
            charge=import_charge(member),
        )  # fmt: skip
    except ImportRefused as refused:
        return _answer(refused)
    except RateLimited as limited:
        return throttled(request, limited, OVER_WINDOW, api=True)
    return _answer(report)


@memory_api(("GET",))
def export_obsidian(request: HttpRequest, member: Member) -> HttpResponseBase:
    """Every memory the caller wrote (both layers) as an Obsidian vault zip, streamed as written."""
    response = StreamingHttpResponse(obsidian_export(member), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{EXPORT_NAME}"'
    return response
