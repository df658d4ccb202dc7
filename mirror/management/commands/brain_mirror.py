"""Git mirrors from the shell: list their state, push one now, adopt a remote that moved.

manage.py brain_mirror status
manage.py brain_mirror push NAME
manage.py brain_mirror adopt NAME
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grants.models import ServiceAccount
from grants.principals import SYSTEM
from mirror.models import Mirror
from mirror.services import mirror_adopt_remote, mirror_run, mirror_save


class Command(BaseCommand):
    help = "Show git mirrors' state, push one now, or adopt a remote branch that moved."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "push", "adopt", "demo"])
        parser.add_argument("name", nargs="?")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "demo":
            self._demo()
            return
        if options["action"] == "status":
            for each in Mirror.objects.select_related("service_account"):
                self.stdout.write(
                    f"{each.name}: {each.get_state_display()} — {each.remote_url} {each.branch} as "
                    f"{each.service_account.name}; pushed {each.pushed_sha[:12] or 'never'}"
                    + (f"; {each.last_error}" if each.last_error else "")
                )
            return
        if not options["name"]:
            raise CommandError(f"{options['action']} needs the mirror's name")
        found = Mirror.objects.filter(name=options["name"]).first()
        if found is None:
            raise CommandError(f"no mirror is named {options['name']!r}")
        mirror = found
        if options["action"] == "adopt":
            try:
                mirror_adopt_remote(actor=SYSTEM, mirror=mirror)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        outcome = mirror_run(mirror_id=mirror.pk)
        line = f"{mirror.name}: {outcome.state}"
        if not outcome.ran:
            # Not a failure of this command: the run in progress runs again after it.
            self.stdout.write(f"{line} — {outcome.detail}")
            return
        if outcome.commit:
            line += f", pushed {outcome.commit[:12]} ({outcome.files} files changed)"
        elif outcome.detail:
            line += f" — {outcome.detail}"
        else:
            line += ", nothing changed"
        self.stdout.write(line)
        if outcome.state in (Mirror.State.MOVED, Mirror.State.FAILING):
            raise CommandError(line)

    def _demo(self) -> None:
        """The demo's mirror: ``docs-mirror`` (read on ``topics/``) into a bare repository in
        ``var/``, created once and pushed now; clone it to see what a mirror holds."""
        from brain.launcher import var_dir
        from mirror.git import Repository

        service = ServiceAccount.objects.filter(name="docs-mirror").first()
        if service is None:
            raise CommandError("run demo_seed first: the demo mirror runs as the docs-mirror service account")
        path = var_dir() / "demo-mirror.git"
        Repository(path).ensure()
        mirror = Mirror.objects.filter(name="demo").first() or mirror_save(
            actor=SYSTEM,
            mirror=Mirror(name="demo", remote_url=f"file://{path}", branch="main", service_account=service),
        )
        outcome = mirror_run(mirror_id=mirror.pk)
        self.stdout.write(f"demo mirror: {outcome.state}{', pushed ' + outcome.commit[:12] if outcome.commit else ''}"
                          f" — git clone {path}")  # fmt: skip
