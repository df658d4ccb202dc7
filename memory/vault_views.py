"""The import page (``/memory/import/``): upload an Obsidian vault zip or a Notion export zip and
read the report; and the Obsidian export download for the signed-in member."""

from __future__ import annotations

from typing import IO, Any, cast

from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from brain.ratelimit import RateLimited, throttled
from grants.decorators import limited_view
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.vault_api import EXPORT_NAME, OVER_WINDOW, import_charge
from memory.vaults import ImportRefused, ImportReport, notion_import, obsidian_export, obsidian_import
from memory.vaults.obsidian import vault_files_from_zip
from memory.views import member_view


def _run(member: Member, kind: str, archive: IO[bytes], vault: str, workspace: str | None) -> ImportReport:
    charge = import_charge(member)
    if kind == "obsidian":
        files, folder = vault_files_from_zip(archive)
        return obsidian_import(
            actor=member, files=files, vault=vault or folder or "vault", workspace=workspace, charge=charge
        )
    if kind == "notion":
        return notion_import(actor=member, zip_bytes=archive, workspace=workspace, charge=charge)
    raise MemoryInvalid("choose what the zip is: an Obsidian vault or a Notion export")


@require_http_methods(["GET", "POST"])
@limited_view("upload")
@member_view
def import_page(request: HttpRequest, member: Member) -> HttpResponseBase:
    """GET: the two upload forms and the export link. POST: import one zip and show its report.

    A refused import lists every problem and stores nothing (400); other refusals (a bad
    vault name or layer) come back as a message, as everywhere on the dashboard.
    """
    context: dict[str, Any] = {"report": None, "problems": [], "kind": request.POST.get("kind", "")}
    status = 200
    if request.method == "POST":
        upload = request.FILES.get("archive")
        if upload is None:
            context["problems"] = ["attach a .zip file"]
            return render(request, "memory/import.html", context, status=400)
        try:
            # Read from where Django spooled the upload (a temporary file past 2.5 MB).
            context["report"] = _run(
                member, context["kind"], cast(IO[bytes], upload), request.POST.get("vault", "").strip(),
                request.POST.get("workspace") or None,
            )  # fmt: skip
        except ImportRefused as refused:
            context["problems"] = refused.problems
            status = 400
        except RateLimited as limited:
            return throttled(request, limited, OVER_WINDOW)
    return render(request, "memory/import.html", context, status=status)


@require_GET
@member_view
def export_obsidian(request: HttpRequest, member: Member) -> HttpResponseBase:
    """Everything the member wrote (both layers) as an Obsidian vault zip."""
    response = StreamingHttpResponse(obsidian_export(member), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{EXPORT_NAME}"'
    return response
