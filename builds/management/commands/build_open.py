"""``python manage.py build_open --requester U --title T [--purpose P]``: a build for an agent.

Opens a change build requested by U and prints its credential once, with the MCP address
and a client configuration to paste. The credential writes drafts only; a person approves.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError

from builds.services import build_credential_issue, build_open
from grants.models import Member


class Command(BaseCommand):
    help = "Open a change build and print its credential once (for an agent on /api/build/mcp)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--requester", required=True, help="the member the agent works for")
        parser.add_argument("--title", required=True)
        parser.add_argument("--purpose", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        requester = (
            Member.objects.select_related("user")
            .filter(user__username=options["requester"], is_active=True, user__is_active=True)
            .first()
        )
        if requester is None:
            raise CommandError(f"{options['requester']!r} is not an active member")
        try:
            build = build_open(actor=requester, title=options["title"], purpose=options["purpose"])
            credential, token = build_credential_issue(actor=requester, build=build)
        except (ValidationError, PermissionDenied) as error:
            raise CommandError("; ".join(getattr(error, "messages", [str(error)]))) from None
        url = settings.BRAIN_BASE_URL + "/api/build/mcp"
        config = {"mcpServers": {"brain-build": {"type": "http", "url": url,
                                                 "headers": {"Authorization": f"Bearer {token}"}}}}  # fmt: skip
        self.stdout.write(f"build {build.public_id}: {build.title}")
        self.stdout.write(f"credential (shown once, valid until {credential.expires_at:%Y-%m-%d %H:%M} UTC): {token}")
        self.stdout.write(f"MCP endpoint: {url}")
        self.stdout.write("client configuration:")
        self.stdout.write(json.dumps(config, indent=2))
