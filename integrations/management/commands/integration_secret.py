"""``manage.py integration_secret set NAME`` (value from stdin, never argv) and ``rotate``."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grants.principals import SYSTEM
from integrations.secrets import SecretUnavailable, secret_set, secrets_rotate


class Command(BaseCommand):
    help = "Set an integration secret (read from stdin) or re-encrypt all with the newest key."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        setter = sub.add_parser("set")
        setter.add_argument("name")
        sub.add_parser("rotate")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "rotate":
                self.stdout.write(f"re-encrypted {secrets_rotate()} secret(s) with the newest key")
                return
            value = sys.stdin.readline().rstrip("\n")
            secret_set(actor=SYSTEM, name=options["name"], value=value)
        except (SecretUnavailable, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"set {options['name']} (the value is not shown)")
