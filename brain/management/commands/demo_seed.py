"""``python manage.py demo_seed``: load the demo organisation (idempotent)."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction


class Command(BaseCommand):
    help = "Load demo data (an admin user for now). Safe to run any number of times."

    def handle(self, *args: Any, **options: Any) -> None:
        password = self._demo_password()
        User = get_user_model()
        with transaction.atomic():
            admin, created = User.objects.get_or_create(
                username="admin", defaults={"email": "admin@example.com", "is_staff": True, "is_superuser": True}
            )
            if created:
                admin.set_password(password)
                admin.save(update_fields=["password"])
        self.stdout.write(f"demo data {'loaded' if created else 'already present'}")

    def _demo_password(self) -> str:
        """``BRAIN_DEMO_PASSWORD``, else a random one generated once and kept in var/ (0600)."""
        if settings.BRAIN_DEMO_PASSWORD:
            return str(settings.BRAIN_DEMO_PASSWORD)
        path = settings.VAR_DIR / "demo-password"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(12))
        return path.read_text().strip()
