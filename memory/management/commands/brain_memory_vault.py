"""``manage.py brain_memory_vault import|export``: a member's memories and a real Obsidian vault folder.

    brain_memory_vault import ~/Notes --member alice [--vault Notes] [--workspace personal|company]
    brain_memory_vault export ~/brain-vault --member alice

``import`` reads the folder (hidden folders such as ``.obsidian/`` are not entered, symbolic
links not followed) and imports every note as ``memory.vaults.obsidian`` describes; the
vault name defaults to the folder's name and is part of every origin, so keep it the same
between runs. Nothing is stored when a note is refused: every problem is printed.
``export`` writes every memory the member wrote into an empty (or new) folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from grants.models import Member
from memory.classify import MemoryInvalid
from memory.vaults import ImportRefused, ImportReport, obsidian_files, obsidian_import, vault_files_from_folder


class Command(BaseCommand):
    help = "Import an Obsidian vault folder as a member's memories, or export their memories as one."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        into = sub.add_parser("import", help="import a vault folder")
        into.add_argument("folder", type=Path)
        into.add_argument("--member", required=True)
        into.add_argument("--vault", help="the vault's name in each origin (default: the folder's name)")
        into.add_argument("--workspace", choices=["personal", "company"])
        out = sub.add_parser("export", help="write the member's memories into a folder")
        out.add_argument("folder", type=Path)
        out.add_argument("--member", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        member = Member.objects.filter(user__username=options["member"], is_active=True).first()
        if member is None:
            raise CommandError(f"{options['member']!r} is not an active member")
        folder: Path = options["folder"]
        if options["action"] == "export":
            self._export(member, folder)
            return
        if not folder.is_dir():
            raise CommandError(f"{folder} is not a folder")
        try:
            report = obsidian_import(
                actor=member, files=vault_files_from_folder(folder), vault=options["vault"] or folder.resolve().name,
                workspace=options["workspace"],
            )  # fmt: skip
        except ImportRefused as refused:
            for problem in refused.problems:
                self.stderr.write(f"  - {problem}")
            raise CommandError(f"{len(refused.problems)} problem(s); nothing was imported") from None
        except MemoryInvalid as invalid:
            raise CommandError(str(invalid)) from None
        self._summary(report)

    def _summary(self, report: ImportReport) -> None:
        outcomes = ", ".join(f"{count} {outcome}" for outcome, count in sorted(report.outcomes.items())) or "no notes"
        self.stdout.write(f"notes: {outcomes}")
        self.stdout.write(
            f"links: {report.links_created} drawn, {report.links_existing} already there, "
            f"{report.links_missing} to missing notes, {report.links_skipped} not possible"
        )
        for skipped in report.skipped:
            self.stdout.write(f"skipped {skipped.label}: {skipped.reason}")
        if report.other_files:
            self.stdout.write(f"{report.other_files} other file(s) not read")
        if report.ignored_fields:
            self.stdout.write("front matter not imported: " + ", ".join(sorted(report.ignored_fields)))

    def _export(self, member: Member, folder: Path) -> None:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise CommandError(f"{folder} is not an empty folder; export into a new or empty one")
        written = 0
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for file in obsidian_files(member):
                target = folder / file.path  # "<layer>/<slug>-<id>.md": made by the export, never from input
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(file.data)
                written += 1
        except OSError as error:  # a folder that cannot be made, a full disk: named, not a traceback
            where = error.filename or folder
            raise CommandError(f"cannot write the vault at {where}: {error.strerror or error} "
                               f"({written} note(s) written before)") from None  # fmt: skip
        self.stdout.write(f"wrote {written} note(s) to {folder}")
