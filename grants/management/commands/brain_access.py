"""``python manage.py brain_access explain (USER | --group G | --service S) PATH``.

Why a member, group or service account holds what it holds on a page: the effective
permission, every grant that reaches the page and why, and why the others do not (above all
why a restricted or secret page is not reached by a folder grant). Uses the query predicate.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from brain.text.paths import PathError, validate_page_path
from corpus.explain import Subject, explain_access
from grants.models import Group, Member, Sensitivity, ServiceAccount


class Command(BaseCommand):
    help = "Explain a principal's access to a page path."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        explain = sub.add_parser("explain", help="effective permission on a path, and why")
        explain.add_argument("user", nargs="?", help="a member's username")
        explain.add_argument("path", help="a page path, e.g. topics/pricing/discount-policy.md")
        explain.add_argument("--group", help="explain for a group instead of a member")
        explain.add_argument("--service", help="explain for a service account instead of a member")
        explain.add_argument("--category", help="when no page exists there: the category it would have")
        explain.add_argument(
            "--sensitivity", choices=["ordinary", "restricted", "secret"], help="when no page exists there"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        subject = self._subject(options)
        try:
            path = validate_page_path(options["path"])
        except PathError as exc:
            raise CommandError(f"{options['path']!r} is not a page path: {exc.message}") from None
        sensitivity = Sensitivity.from_name(options["sensitivity"]) if options["sensitivity"] else None
        result = explain_access(subject, path, category=options["category"], sensitivity=sensitivity)
        self.stdout.write(f"{result.subject} on {result.path}")
        self.stdout.write(f"  page: category {result.category or 'none'}, {result.sensitivity}"
                          f"{'' if result.page_exists else ' (no page there)'}")  # fmt: skip
        effective = result.effective or "none (the page is not available to them)"
        self.stdout.write(self.style.SUCCESS(f"  effective permission: {effective}"))
        for note in result.notes:
            self.stdout.write(f"  note: {note}")
        for line in result.reaching:
            self.stdout.write(
                f"  + grant {line.grant_id} ({line.holder}): {line.permission} on {line.scope} — {line.why}"
            )
        for line in result.not_reaching:
            self.stdout.write(
                f"  - grant {line.grant_id} ({line.holder}): {line.permission} on {line.scope} — {line.why}"
            )

    def _subject(self, options: dict[str, Any]) -> Subject:
        chosen = [name for name in ("user", "group", "service") if options.get(name)]
        if len(chosen) != 1:
            raise CommandError("name exactly one of: a member's USER, --group or --service")
        if options["group"]:
            group = Group.objects.filter(name=options["group"]).first()
            if group is None:
                raise CommandError(f"no group named {options['group']!r}")
            return group
        if options["service"]:
            service = ServiceAccount.objects.filter(name=options["service"]).first()
            if service is None:
                raise CommandError(f"no service account named {options['service']!r}")
            return service
        member = Member.objects.select_related("user").filter(user__username=options["user"]).first()
        if member is None:
            raise CommandError(f"no member with username {options['user']!r}")
        return member
