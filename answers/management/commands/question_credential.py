"""``manage.py question_credential issue|revoke``: credentials that may only ask questions.

    question_credential issue --name support-bot --member alice
    question_credential issue --name docs-bot --service docs-mirror
    question_credential revoke 7

The raw credential is printed once; only its hash is kept.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers.credentials import question_credential_issue, question_credential_revoke
from answers.models import QuestionCredential
from grants.models import Member, ServiceAccount
from grants.principals import SYSTEM


class Command(BaseCommand):
    help = "Issue or revoke a question credential (sees only ask and await_answer on /api/mcp)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        issue = sub.add_parser("issue")
        issue.add_argument("--name", required=True)
        owner = issue.add_mutually_exclusive_group(required=True)
        owner.add_argument("--member")
        owner.add_argument("--service")
        revoke = sub.add_parser("revoke")
        revoke.add_argument("credential_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "revoke":
                question_credential_revoke(actor=SYSTEM, credential_id=options["credential_id"])
                self.stdout.write(f"revoked credential {options['credential_id']}")
                return
            member = service = None
            if options.get("member"):
                member = Member.objects.get(user__username=options["member"])
            else:
                service = ServiceAccount.objects.get(name=options["service"])
            row, raw = question_credential_issue(
                actor=SYSTEM, name=options["name"], member=member, service_account=service
            )
        except (Member.DoesNotExist, ServiceAccount.DoesNotExist) as exc:
            raise CommandError("no such member or service account") from exc
        except QuestionCredential.DoesNotExist as exc:
            raise CommandError("no such live credential") from exc
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"credential {row.pk} ({row.name}) — shown once, keep it secret:\n{raw}")
