"""``python manage.py brain_member add USERNAME --email E [--role admin] [--password P]`` (and ``list``)."""

from __future__ import annotations

import argparse
from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from grants.models import Member
from grants.principals import SYSTEM
from grants.services import member_create


class Command(BaseCommand):
    help = "Add or list members (operator command; runs as the system actor)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="create a user and their member row")
        add.add_argument("username")
        add.add_argument("--email", default="")
        add.add_argument("--role", choices=Member.Role.values, default=Member.Role.MEMBER)
        add.add_argument("--password", help="omit for an account that cannot sign in with a password")
        add.add_argument("--slack-user-id")
        sub.add_parser("list", help="list members")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "list":
            for member in Member.objects.select_related("user"):
                state = "active" if member.is_active else "inactive"
                self.stdout.write(f"{member.username}\t{member.role}\t{state}")
            return
        if options["password"]:
            candidate = get_user_model()(username=options["username"], email=options["email"] or "")
            try:
                password_validation.validate_password(options["password"], user=candidate)
            except ValidationError as exc:
                raise CommandError("password: " + " ".join(exc.messages)) from None
        try:
            member = member_create(
                actor=SYSTEM,
                username=options["username"],
                email=options["email"],
                role=options["role"],
                password=options["password"],
                slack_user_id=options["slack_user_id"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(self.style.SUCCESS(f"member {member.username} added ({member.role})"))
