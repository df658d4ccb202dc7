"""Question credentials (``bqc_``): a bot or script asks questions as one member or service account."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from brain import bearer, callers
from brain.callers import Caller
from grants.models import Member, ServiceAccount

CREDENTIAL_PREFIX = "bqc_"


def question_credential_issue(
    *, actor: Any, name: str, member: Member | None = None, service_account: ServiceAccount | None = None
) -> tuple[Any, str]:
    """Issue a question credential to a member or a service account (administrators only); the raw value once."""
    from answers.models import QuestionCredential
    from grants.audit import audit_record
    from grants.services import require_administrator

    require_administrator(actor)
    if (member is None) == (service_account is None):
        raise ValidationError({"owner": "issue the credential to exactly one member or service account"})
    if not (name or "").strip() or len(name) > 80:
        raise ValidationError({"name": "name the credential (1 to 80 characters)"})
    token = bearer.mint(CREDENTIAL_PREFIX)
    with transaction.atomic():
        row = QuestionCredential.objects.create(
            name=name.strip(), member=member, service_account=service_account,
            token_hash=token.digest, prefix=token.shown,
            issued_by=actor if isinstance(actor, Member) else None,
        )  # fmt: skip
        audit_record(actor=actor, action="question_credential.issue", target_type="question_credential",
                     target=row.name, metadata={"id": row.pk})  # fmt: skip
    return row, token.raw


def question_credential_revoke(*, actor: Any, credential_id: int) -> None:
    from answers.models import QuestionCredential
    from grants.audit import audit_record
    from grants.services import require_administrator

    require_administrator(actor)
    with transaction.atomic():
        updated = QuestionCredential.objects.filter(pk=credential_id, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if not updated:
            raise QuestionCredential.DoesNotExist("no such live credential")
        audit_record(actor=actor, action="question_credential.revoke", target_type="question_credential",
                     target=str(credential_id))  # fmt: skip


def question_credential_revoke_own(*, actor: Member, credential_id: int) -> None:
    """A member revokes a live question credential issued to them; any other is ``DoesNotExist``."""
    from answers.models import QuestionCredential
    from grants.audit import audit_record

    with transaction.atomic():
        updated = QuestionCredential.objects.filter(pk=credential_id, member=actor, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if not updated:
            raise QuestionCredential.DoesNotExist("no such live credential")
        audit_record(actor=actor, action="question_credential.revoke", target_type="question_credential",
                     target=str(credential_id))  # fmt: skip


def question_credential_owner(raw: str) -> Member | ServiceAccount | None:
    """The active owner behind a live question credential, or None."""
    from answers.models import QuestionCredential

    if not raw.startswith(CREDENTIAL_PREFIX):
        return None
    row = (
        QuestionCredential.objects.select_related("member__user", "service_account")
        .filter(token_hash=bearer.digest(raw), revoked_at__isnull=True)
        .first()
    )
    if row is None:
        return None
    if row.member is not None:
        return row.member if row.member.is_active and row.member.user.is_active else None
    return row.service_account if row.service_account is not None and row.service_account.is_active else None


def question_credential_resolve(raw: str) -> Caller | None:
    """The ``question`` caller behind a question credential (``brain.callers`` resolver)."""
    owner = question_credential_owner(raw)
    return Caller(principal=owner, kind=callers.QUESTION) if owner is not None else None


def question_credentials_issued_by(member: Member) -> list[Any]:
    """The live question credentials ``member`` issued to anyone: they saw each raw value once."""
    from answers.models import QuestionCredential

    return list(
        QuestionCredential.objects.filter(issued_by=member, revoked_at__isnull=True)
        .select_related("member", "service_account")
        .order_by("created_at", "pk")
    )


def question_credentials_revoke_issued_by(member: Member) -> int:
    """Revoke every live question credential ``member`` issued, whoever holds it; returns how many.

    A leaving administrator saw the raw value of each credential they issued (to a bot, to a
    colleague), so it goes with their access; the holder asks an administrator for a new one.
    Runs inside the caller's transaction; the caller (``accounts.services``) audits.
    """
    from answers.models import QuestionCredential

    return QuestionCredential.objects.filter(issued_by=member, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


def question_credentials_revoke_all(
    *, member: Member | None = None, service_account: ServiceAccount | None = None
) -> int:
    """Revoke every live question credential held by ``member`` or ``service_account``
    (suspension, deactivation); returns how many.

    Runs inside the caller's transaction; the caller (``accounts.services``) audits.
    """
    from answers.models import QuestionCredential

    if (member is None) == (service_account is None):
        raise ValueError("name exactly one holder: a member or a service account")
    held = QuestionCredential.objects.filter(revoked_at__isnull=True)
    held = held.filter(member=member) if member is not None else held.filter(service_account=service_account)
    return held.update(revoked_at=timezone.now())
