"""``python manage.py build_import PATH --requester U [--wait]``.

Opens an import build from a folder or a ``.zip`` of Markdown pages. Every file is
validated first (nothing is queued if one is invalid); the drafting then runs on the
Celery workers in durable steps, and the build awaits a person's review. ``--wait``
shows progress until the drafts are written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from builds.driver import ArchiveRefused, files_from_folder, files_from_zip, import_job_create, job_progress
from builds.models import Build
from builds.services import ImportInvalid
from grants.models import Member


class Command(BaseCommand):
    help = "Open an import build (folder or zip) whose drafts await review."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--requester", required=True)
        parser.add_argument("--title")
        parser.add_argument("--wait", action="store_true", help="show progress until the drafts are written")

    def handle(self, *args: Any, **options: Any) -> None:
        source: Path = options["path"]
        requester = Member.objects.filter(user__username=options["requester"], is_active=True).first()
        if requester is None:
            raise CommandError(f"{options['requester']!r} is not an active member")
        try:
            if source.is_dir():
                files = files_from_folder(source)
            elif source.suffix == ".zip" and source.is_file():
                files = files_from_zip(source.read_bytes())
            else:
                raise CommandError(f"{source} is neither a folder nor a .zip file")
            build = import_job_create(
                requester=requester, files=files, title=options["title"] or f"Import of {source.name}"
            )
        except ArchiveRefused as exc:
            raise CommandError(str(exc)) from None
        except ImportInvalid as invalid:
            for report in invalid.reports:
                self.stderr.write(f"{report.path}:")
                for problem in report.problems:
                    self.stderr.write(f"  - {problem}")
            raise CommandError(f"{len(invalid.reports)} file(s) invalid; nothing was imported") from None
        self.stdout.write(f"build {build.public_id} opened with {len(files)} page(s); drafting on the workers")
        if options["wait"]:
            self._wait(build)

    def _wait(self, build: Build) -> None:
        while True:
            build.refresh_from_db()
            done, total = job_progress(build)
            width = 30
            filled = int(width * done / total) if total else width
            sys.stdout.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} drafted")
            sys.stdout.flush()
            if build.status != Build.Status.OPEN:
                sys.stdout.write("\n")
                self.stdout.write(f"build {build.public_id} is {build.get_status_display()}")
                return
            time.sleep(1)
