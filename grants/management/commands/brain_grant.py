"""``python manage.py brain_grant add (--member U | --group G | --service S) (--path P | --category C) --permission P``.

Also ``list`` and ``revoke ID``. Runs as the system actor (an operator at the console).
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from grants.models import Grant, Group, Member, ServiceAccount
from grants.principals import SYSTEM
from grants.services import grant_issue, grant_revoke


class Command(BaseCommand):
    help = "Issue, list or revoke grants."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="issue a grant")
        subject = add.add_mutually_exclusive_group(required=True)
        subject.add_argument("--member")
        subject.add_argument("--group")
        subject.add_argument("--service")
        scope = add.add_mutually_exclusive_group(required=True)
        scope.add_argument("--path", help="exact page path, or a prefix ending in '/' ('' = everything)")
        scope.add_argument("--category")
        add.add_argument("--permission", required=True, choices=["read", "suggest", "approve"])
        sub.add_parser("list", help="list grants")
        revoke = sub.add_parser("revoke", help="revoke a grant by id")
        revoke.add_argument("grant_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "list":
            for grant in Grant.objects.select_related("member__user", "group", "service_account"):
                self.stdout.write(f"{grant.pk}\t{grant}")
            return
        if action == "revoke":
            found = Grant.objects.filter(pk=options["grant_id"]).first()
            if found is None:
                raise CommandError(f"no grant with id {options['grant_id']}")
            grant_revoke(actor=SYSTEM, grant=found)
            self.stdout.write(self.style.SUCCESS(f"grant {options['grant_id']} revoked"))
            return
        subjects: dict[str, Any] = {}
        if options["member"]:
            subjects["member"] = self._lookup(Member, "member", user__username=options["member"])
        elif options["group"]:
            subjects["group"] = self._lookup(Group, "group", name=options["group"])
        else:
            subjects["service_account"] = self._lookup(ServiceAccount, "service account", name=options["service"])
        try:
            grant = grant_issue(
                actor=SYSTEM,
                permission=options["permission"],
                path=options["path"],
                category=options["category"],
                **subjects,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(self.style.SUCCESS(f"grant {grant.pk}: {grant}"))

    @staticmethod
    def _lookup(model: Any, label: str, **lookup: Any) -> Any:
        found = model.objects.filter(**lookup).first()
        if found is None:
            raise CommandError(f"no {label} named {next(iter(lookup.values()))!r}")
        return found
