"""The import page (``/memory/import/``): upload an Obsidian vault zip or a Notion export zip and
read the report; a large import's own page (``/memory/import/<id>/``), following it while a
worker runs it; and the Obsidian export download for the signed-in member."""

from __future__ import annotations

from typing import IO, Any, cast

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from brain.inputs import typed_back
from brain.ratelimit import RateLimited, throttled
from grants.decorators import limited_view
from grants.models import Member
from memory.models import VaultImport
from memory.vault_api import EXPORT_NAME, OVER_WINDOW, import_charge
from memory.vault_jobs import (
    ImportBusy,
    in_background,
    run_import,
    upload_read,
    vault_import_get,
    vault_import_queue,
    vault_imports_recent,
)
from memory.vaults import ImportRefused, ImportReport, obsidian_export
from memory.views import member_view


@require_http_methods(["GET", "POST"])
@limited_view("upload")
@member_view
def import_page(request: HttpRequest, member: Member) -> HttpResponseBase:
    """GET: the two upload forms, the member's latest background imports and the export link.
    POST: import one zip and show its report — or, past ``BRAIN_IMPORT_BACKGROUND_NOTES``
    notes, hand it to a worker and go to its page.

    A refused import lists every problem and stores nothing (400); other refusals (a bad
    vault name or layer) come back as a message, as everywhere on the dashboard.
    """
    context: dict[str, Any] = {"report": None, "problems": [], "kind": request.POST.get("kind", "")}
    # What was chosen comes back with a refusal (the vault's name is part of every note's key:
    # retyped wrong, the next import is another vault). A name holding a secret is not echoed.
    shown = typed_back(request.POST)
    context["typed"] = {"vault": shown.get("vault", "").strip(), "workspace": shown.get("workspace", "")}
    status = 200
    if request.method == "POST":
        upload = request.FILES.get("archive")
        if upload is None:
            context["problems"] = ["attach a .zip file"]
            context.update(
                imports=vault_imports_recent(member), background_notes=settings.BRAIN_IMPORT_BACKGROUND_NOTES
            )
            return render(request, "memory/import.html", context, status=400)
        # Read from where Django spooled the upload (a temporary file past 2.5 MB).
        archive = cast(IO[bytes], upload)
        vault, workspace = request.POST.get("vault", "").strip(), request.POST.get("workspace") or None
        try:
            read = upload_read(context["kind"], archive)
            if in_background(read):
                job = vault_import_queue(
                    actor=member, upload=read, vault=vault, workspace=workspace, charge=import_charge(member)
                )
                return redirect("memory:import-job", job.pk)
            context["report"] = run_import(
                actor=member, upload=read, vault=vault, workspace=workspace, charge=import_charge(member)
            )
        except ImportRefused as refusal:
            context["problems"] = refusal.problems
            status = 400
        except ImportBusy as busy:
            context["problems"] = [str(busy)]
            status = 409
        except RateLimited as limited:
            return throttled(request, limited, OVER_WINDOW)
    context["imports"] = vault_imports_recent(member)
    context["background_notes"] = settings.BRAIN_IMPORT_BACKGROUND_NOTES
    return render(request, "memory/import.html", context, status=status)


@require_GET
@vary_on_headers("HX-Request")  # page or fragment by this header: Back must not show the fragment alone
@member_view
def import_job_page(request: HttpRequest, member: Member, job_id: str) -> HttpResponseBase:
    """One background import of the member's: how far it got, then its report or its problems.
    Anyone else's import is a 404, as a missing one is."""
    try:
        job = vault_import_get(member, job_id)
    except VaultImport.DoesNotExist:
        if request.headers.get("HX-Request"):
            # Gone while the page followed it (forgotten after 30 days, its person offboarded):
            # 286 is htmx's "stop polling"; the part says so instead of asking every 2 s forever.
            return HttpResponse("<p>This import is no longer kept.</p>", status=286)
        raise Http404 from None
    report = ImportReport.from_dict(job.report) if job.state == VaultImport.State.DONE and job.report else None
    context = {"job": job, "report": report}
    template = "memory/_import_job.html" if request.headers.get("HX-Request") else "memory/import_job.html"
    return render(request, template, context)


@require_GET
@member_view
def export_obsidian(request: HttpRequest, member: Member) -> HttpResponseBase:
    """Everything the member wrote (both layers) as an Obsidian vault zip."""
    response = StreamingHttpResponse(obsidian_export(member), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{EXPORT_NAME}"'
    return response
