"""``python manage.py capsules_check``: verify the capsule triggers and index; repair them if needed.

Run at start-up (``make run`` does) and after restoring a database: a missing or changed
trigger, function or index is reinstalled atomically together with a rotation of every
capsule revision, so nothing cached while it was broken is served again.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory.capsule_sql import check_and_repair


class Command(BaseCommand):
    help = "Verify (and repair) the prompt-capsule triggers and index."

    def handle(self, *args: Any, **options: Any) -> None:
        repaired = check_and_repair()
        if repaired:
            self.stdout.write(self.style.WARNING("repaired (revisions rotated): " + ", ".join(repaired)))
        else:
            self.stdout.write("capsule triggers and index: as expected")
