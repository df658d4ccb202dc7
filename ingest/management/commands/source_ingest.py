"""``python manage.py source_ingest PATH... --as USER``: upload documents and extract them now.

Each file is stored and extracted in this process (no worker needed), with a progress bar;
a file that fails says why and the rest go on. The exit status is 1 if any failed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from grants.models import Member
from ingest.models import Extraction
from ingest.services import document_ingest, extraction_run


class Command(BaseCommand):
    help = "Ingest documents (Markdown, text, HTML, PDF, DOCX, VTT, SRT) as captures."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--as", dest="username", required=True, help="the member who uploads")
        parser.add_argument("--category", default=None)
        parser.add_argument("--sensitivity", default="ordinary", choices=["ordinary", "restricted", "secret"])

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            member = Member.objects.select_related("user").get(user__username=options["username"], is_active=True)
        except Member.DoesNotExist as exc:
            raise CommandError(f"no active member named {options['username']!r}") from exc
        files = [path for path in options["paths"] if path.is_file()]
        missing = [str(path) for path in options["paths"] if not path.is_file()]
        for path in missing:
            self.stderr.write(f"not a file: {path}")
        failures = len(missing)
        for number, path in enumerate(files, start=1):
            try:
                extraction = document_ingest(
                    actor=member, filename=path.name, data=path.read_bytes(), category=options["category"],
                    sensitivity=options["sensitivity"], enqueue=False,
                )  # fmt: skip
                extraction_run(extraction.pk)
                extraction.refresh_from_db()
                outcome = (
                    extraction.status
                    if extraction.status != Extraction.Status.FAILED
                    else f"failed: {extraction.error}"
                )
                key = extraction.document.source.key
            except (ValidationError, PermissionDenied) as exc:
                outcome = "refused: " + ("; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc))
                key = "-"
            if outcome.startswith(("failed", "refused")):
                failures += 1
            done = int(30 * number / len(files))
            self.stdout.write(f"[{'#' * done}{'.' * (30 - done)}] {number}/{len(files)} {path.name} → {key}: {outcome}")
        if failures:
            self.stderr.write(f"{failures} file(s) not ingested")
            sys.exit(1)
