"""``python manage.py brain_people invite|suspend|reactivate|offboard …``: people come and go.

The operator's form of the admin's actions; runs as the system actor, through the same
services (so each action is audited the same way).
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts import services
from grants.models import Member
from grants.principals import SYSTEM


def _member(username: str) -> Member:
    member = Member.objects.select_related("user").filter(user__username=username).first()
    if member is None:
        raise CommandError(f"no member named {username!r}")
    return member


class Command(BaseCommand):
    help = "Invite, suspend, reactivate or offboard a member (operator command; runs as the system actor)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        invite = sub.add_parser("invite", help="create a member and email them a single-use link to set a password")
        invite.add_argument("username")
        invite.add_argument("--email", required=True)
        invite.add_argument("--role", choices=Member.Role.values, default=Member.Role.MEMBER)
        suspend = sub.add_parser("suspend", help="end every session and credential of a member")
        suspend.add_argument("username")
        suspend.add_argument("--reassign-to", help="carry their open builds on as this member (default: cancel)")
        reactivate = sub.add_parser("reactivate", help="let a suspended member back in (credentials stay revoked)")
        reactivate.add_argument("username")
        offboard = sub.add_parser("offboard", help="a member leaves: personal memories deleted, shared ones kept")
        offboard.add_argument("username")
        offboard.add_argument("--reassign-to", help="carry their open builds on as this member (default: cancel)")
        offboard.add_argument("--no-export", action="store_true", help="do not email them their personal memories")
        offboard.add_argument("--yes", action="store_true", help="confirm: their personal memories are deleted")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "invite":
                invitation = services.member_invite(
                    actor=SYSTEM, username=options["username"], email=options["email"], role=options["role"]
                )
                self.stdout.write(f"invited {options['username']}: link sent to {invitation.email}, "
                                  f"expires {invitation.expires_at:%Y-%m-%d %H:%M} UTC")  # fmt: skip
            elif action == "suspend":
                to = _member(options["reassign_to"]) if options["reassign_to"] else None
                ended = services.member_suspend(actor=SYSTEM, member=_member(options["username"]), reassign_to=to)
                self.stdout.write(f"suspended {options['username']}: " + ", ".join(
                    f"{name.replace('_', ' ')} {count}" for name, count in ended.as_metadata().items()
                ))  # fmt: skip
            elif action == "reactivate":
                services.member_reactivate(actor=SYSTEM, member=_member(options["username"]))
                self.stdout.write(f"reactivated {options['username']} (revoked credentials stay revoked)")
            else:
                if not options["yes"]:
                    raise CommandError("offboarding deletes their personal memories: add --yes to confirm")
                to = _member(options["reassign_to"]) if options["reassign_to"] else None
                done = services.member_offboard(
                    actor=SYSTEM, member=_member(options["username"]), send_export=not options["no_export"],
                    reassign_to=to,
                )  # fmt: skip
                sent = f"; export emailed to {done.export_sent_to}" if done.export_sent_to else ""
                self.stdout.write(f"offboarded {options['username']}: {done.memories_deleted} personal memories "
                                  f"deleted{sent}")  # fmt: skip
                for page in done.owned_pages:
                    self.stdout.write(f"still owns {page} (hand it on through a build)")
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from None
