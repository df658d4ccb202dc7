"""``python manage.py build_reembed --requester U [--all] [--wait]``: re-embed chunks after a model change."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError

from builds.driver import job_progress, reembed_job_create
from builds.models import Build
from grants.models import Member


class Command(BaseCommand):
    help = "Open a re-embedding build over chunks whose vectors came from another model (or --all)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--requester", required=True)
        parser.add_argument("--all", action="store_true", help="re-embed every chunk, not just stale ones")
        parser.add_argument("--wait", action="store_true", help="show progress until it is done")

    def handle(self, *args: Any, **options: Any) -> None:
        requester = Member.objects.filter(user__username=options["requester"], is_active=True).first()
        if requester is None:
            raise CommandError(f"{options['requester']!r} is not an active member")
        try:
            build = reembed_job_create(requester=requester, everything=options["all"])
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"build {build.public_id}: {build.title}")
        while options["wait"]:
            build.refresh_from_db()
            done, total = job_progress(build)
            sys.stdout.write(f"\r{done}/{total} batches re-embedded")
            sys.stdout.flush()
            if build.status != Build.Status.OPEN:
                self.stdout.write(f"\nbuild {build.public_id} is {build.get_status_display()}")
                return
            time.sleep(1)
