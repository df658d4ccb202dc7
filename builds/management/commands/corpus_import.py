"""``python manage.py corpus_import DIR --requester U --approver V``.

Imports every ``*.md`` file under DIR (its path relative to DIR is the page path) as one
import build requested by U and promoted by V (V may not be U unless self-approval is
allowed by settings). All or nothing: if any file is invalid, nothing
is imported, every failing file and rule is reported, and the exit code is non-zero.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from brain.embeddings import EmbeddingError
from builds.driver import ArchiveRefused, files_from_folder
from builds.services import ImportInvalid, build_import
from grants.models import Member


class Command(BaseCommand):
    help = "Import a tree of Markdown pages as one approved change (all or nothing)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("directory", type=Path)
        parser.add_argument("--requester", required=True, help="username of the member proposing the change")
        parser.add_argument("--approver", required=True, help="username of the member approving it")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["directory"]
        requester = self._member(options["requester"])
        approver = self._member(options["approver"])
        try:
            files = files_from_folder(root)  # the folder reader build_import uses: same limits, no links
        except ArchiveRefused as refused:
            raise CommandError(f"{refused}; nothing was imported") from None
        if not files:
            raise CommandError(f"no .md files under {root}")
        self.stdout.write(f"validating {len(files)} page(s)…")
        started = time.monotonic()
        try:
            result = build_import(requester=requester, approver=approver, files=files, title=f"Import of {root.name}")
        except ImportInvalid as invalid:
            for report in invalid.reports:
                self.stderr.write(f"{report.path}:")
                for problem in report.problems:
                    self.stderr.write(f"  - {problem}")
            raise CommandError(
                f"{len(invalid.reports)} of {len(files)} file(s) invalid; nothing was imported"
            ) from None
        except EmbeddingError as exc:
            raise CommandError(f"embedding failed, nothing was imported: {exc}") from None
        elapsed = time.monotonic() - started
        self.stdout.write(
            self.style.SUCCESS(
                f"imported in {elapsed:.1f}s: {result.created} created, {result.updated} updated, "
                f"{result.unchanged} unchanged; chunks {result.chunks.total} "
                f"({result.chunks.new} new, {result.chunks.reused} reused, {result.chunks.embedded} embedded); "
                f"approved by {approver.username}"
            )
        )

    @staticmethod
    def _member(username: str) -> Member:
        member = Member.objects.select_related("user").filter(user__username=username, is_active=True).first()
        if member is None:
            raise CommandError(f"{username!r} is not an active member")
        return member
