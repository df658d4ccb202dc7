"""``python manage.py demo_seed``: load the demo organisation (idempotent).

Members (all with the demo password):
- ``admin`` (owner) and ``charlie`` (admin): administrators with no content grants;
- ``alice``: read on ``topics/``, approve on ``topics/pricing/`` and approve on the restricted
  ``topics/pricing/discount-policy.md`` (the seed's worked example);
- ``bob``: read on ``topics/``;
- ``erin``: read on ``topics/``, approve on ``topics/pricing/``: a second approver, so a change
  alice proposes there has a reviewer who is not its author;
- ``dana``: in group ``engineering`` (approve on ``engineering/``).

Only what is missing is loaded: a page that exists (changed by people since, or retired) is
never overwritten or brought back, so restarting ``make run`` keeps everything people approved.

Captures, a demo corpus across the three tiers (ordinary, restricted, secret) and one
tracked figure. Everything goes through the services, as the system actor.
"""

from __future__ import annotations

import datetime as dt
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from builds.services import build_import
from corpus.figures import figure_record
from corpus.models import Figure, Page, Source
from corpus.sources import source_create
from grants.models import Grant, Group, Member, ServiceAccount
from grants.principals import SYSTEM
from grants.services import (
    grant_issue,
    group_add_member,
    group_create,
    member_create,
    member_ensure,
    service_account_create,
)

DEMO_PAGES = Path(__file__).resolve().parents[2] / "demo" / "pages"

MEMBERS = [
    ("charlie", Member.Role.ADMIN),
    ("alice", Member.Role.MEMBER),
    ("bob", Member.Role.MEMBER),
    ("dana", Member.Role.MEMBER),
    ("erin", Member.Role.MEMBER),
]
GRANTS: list[dict[str, Any]] = [
    {"member": "alice", "path": "topics/", "permission": "read"},
    {"member": "alice", "path": "topics/pricing/", "permission": "approve"},
    {"member": "alice", "path": "topics/pricing/discount-policy.md", "permission": "approve"},
    {"member": "alice", "path": "captures/", "permission": "suggest"},
    {"member": "bob", "path": "topics/", "permission": "read"},
    {"member": "bob", "path": "captures/tickets/", "permission": "read"},
    {"member": "erin", "path": "topics/", "permission": "read"},
    {"member": "erin", "path": "topics/pricing/", "permission": "approve"},
    {"group": "engineering", "path": "engineering/", "permission": "approve"},
    {"group": "engineering", "path": "topics/", "permission": "read"},
    {"service": "docs-mirror", "path": "topics/", "permission": "read"},
]
SOURCES: list[dict[str, Any]] = [
    {
        "key": "gdrive/2026-01-15-northwind-msa",
        "kind": "document",
        "title": "Northwind master services agreement",
        "text": "Master services agreement with Northwind. Discounts above twelve percent need the "
        "commercial lead's sign-off. Term: three years, renewable.",
        "uri": "https://drive.example.com/northwind-msa",
        "category": "pricing",
        "tags": ["contract", "northwind"],
    },
    {
        "key": "tickets/sup-1042",
        "kind": "ticket",
        "title": "SUP-1042: onboarding checklist for Northwind",
        "text": "Customer asked for a kick-off within a week and a weekly check-in during the first month.",
        "uri": "https://support.example.com/SUP-1042",
        "tags": ["onboarding"],
    },
]


class Command(BaseCommand):
    help = "Load demo members, groups, grants, captures and pages. Safe to run any number of times."

    def handle(self, *args: Any, **options: Any) -> None:
        password = self._demo_password()
        with transaction.atomic():
            created_people = self._people(password)
            self._sources()
        missing = self._missing_pages()
        result = (
            build_import(requester=SYSTEM, approver=SYSTEM, files=missing, title="Demo corpus") if missing else None
        )
        if not Figure.objects.filter(key="discount-ceiling").exists():
            figure_record(
                actor=SYSTEM,
                page_path="topics/pricing/discount-policy.md",
                key="discount-ceiling",
                value="12",
                unit="%",
                as_of=dt.date(2026, 9, 2),
                source_key="gdrive/2026-01-15-northwind-msa",
            )
        kept = len(self._pages()) - len(missing)
        self.stdout.write(
            f"demo data: {created_people} member(s) created; pages {result.created if result else 0} created, "
            f"{kept} already there and left as they are"
        )

    def _people(self, password: str) -> int:
        User = get_user_model()
        created = 0
        admin_user, made = User.objects.get_or_create(
            username="admin", defaults={"email": "admin@example.com", "is_staff": True, "is_superuser": True}
        )
        if made:
            admin_user.set_password(password)
            admin_user.save(update_fields=["password"])
            created += 1
        member_ensure(actor=SYSTEM, user=admin_user, role=Member.Role.OWNER)
        for username, role in MEMBERS:
            if not Member.objects.filter(user__username=username).exists():
                member_create(
                    actor=SYSTEM, username=username, email=f"{username}@example.com", role=role, password=password
                )
                created += 1
        engineering = Group.objects.filter(name="engineering").first() or group_create(
            actor=SYSTEM, name="engineering", description="Engineering team"
        )
        group_add_member(actor=SYSTEM, group=engineering, member=Member.objects.get(user__username="dana"))
        if not ServiceAccount.objects.filter(name="docs-mirror").exists():
            service_account_create(actor=SYSTEM, name="docs-mirror", description="One-way Markdown mirror")
        for spec in GRANTS:
            subject: dict[str, Any] = {}
            if "member" in spec:
                subject["member"] = Member.objects.get(user__username=spec["member"])
            elif "group" in spec:
                subject["group"] = Group.objects.get(name=spec["group"])
            else:
                subject["service_account"] = ServiceAccount.objects.get(name=spec["service"])
            if not Grant.objects.filter(path=spec["path"], permission__gte=1, **subject).exists():
                grant_issue(actor=SYSTEM, permission=spec["permission"], path=spec["path"], **subject)
        return created

    def _sources(self) -> None:
        for spec in SOURCES:
            if not Source.objects.filter(key=spec["key"]).exists():
                source_create(actor=SYSTEM, captured_at=timezone.now(), **spec)

    def _missing_pages(self) -> list[tuple[str, str]]:
        """The demo pages with no page row at their path: one that exists — as seeded, edited and
        approved since, or retired — is never touched."""
        pages = self._pages()
        present = set(Page.objects.filter(path__in=[path for path, _ in pages]).values_list("path", flat=True))
        return [(path, text) for path, text in pages if path not in present]

    def _pages(self) -> list[tuple[str, str]]:
        return [
            (file.relative_to(DEMO_PAGES).as_posix(), file.read_text(encoding="utf-8"))
            for file in sorted(DEMO_PAGES.rglob("*.md"))
        ]

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
