"""``python manage.py livechunks_check [--repair]``: is the lexical arm's table of live chunks true?

Compares ``corpus_livechunk`` with the chunks of every page's current revision and checks that
the two triggers keeping it are installed and enabled (``corpus.livechunks``). Exits non-zero
when something is wrong and was not repaired. ``--repair`` rebuilds the rows in one
transaction (searches go on meanwhile); a missing or disabled trigger is reported, never
reinstalled behind the operator's back.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.livechunks import LiveChunkReport, livechunks_check, livechunks_rebuild


def describe(report: LiveChunkReport) -> str:
    return (
        f"{report.rows} rows; {report.missing} live chunks missing, {report.extra} rows not live or duplicated, "
        f"{report.stale} with a stale search vector"
    )


class Command(BaseCommand):
    help = "Check (and with --repair rebuild) corpus_livechunk, the lexical arm's table of live chunks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repair", action="store_true", help="rebuild the rows when they differ")

    def handle(self, *args: Any, **options: Any) -> None:
        report = livechunks_check()
        self.stdout.write(f"corpus_livechunk: {describe(report)}")
        if not report.rows_true and options["repair"]:
            rows = livechunks_rebuild()
            report = livechunks_check()
            self.stdout.write(self.style.WARNING(f"rebuilt: {rows} rows; now {describe(report)}"))
        problems = []
        if not report.rows_true:
            problems.append("the rows differ from the live pages' chunks (run with --repair)")
        for trigger in report.triggers_off:
            problems.append(
                f"trigger {trigger} is missing or disabled, so the table will drift again: enable it "
                "(ALTER TABLE … ENABLE TRIGGER …) or reinstall it from corpus/migrations/0018_live_chunks.py"
            )
        if problems:
            raise CommandError("; ".join(problems))
        self.stdout.write("corpus_livechunk: as expected")
