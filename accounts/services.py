"""The one write path for people coming and going: invite, suspend, reactivate, offboard.

Each service checks that the actor administers (``grants.services.require_administrator``),
runs in one transaction, calls each app's own write path for the credentials and data it
holds, and appends one audit event with the counts (never a token, password or memory).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage, send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.models import Invitation
from accounts.sessions import end_all_sessions
from answers.credentials import (
    question_credentials_issued_by,
    question_credentials_revoke_all,
    question_credentials_revoke_issued_by,
)
from brain import bearer
from builds.services import builds_hand_over
from corpus.models import Page
from grants.audit import audit_record
from grants.models import Member, ServiceAccount
from grants.principals import Principal
from grants.services import (
    may_touch_ownership,
    member_create,
    refuse_losing_the_last_owner,
    require_administrator,
    service_account_update,
)
from memory.api import export_lines
from memory.services import api_tokens_revoke_all, inbound_addresses_retire, personal_layer_delete
from oauth.services import tokens_revoke_all

INVITATION_PREFIX = "inv_"


def invitation_lifetime() -> dt.timedelta:
    return dt.timedelta(hours=int(settings.BRAIN_INVITATION_HOURS))


# --------------------------------------------------------------------------- invitations


def member_invite(*, actor: Principal, username: str, email: str, role: str = Member.Role.MEMBER) -> Invitation:
    """Create a member with no password and email them a link to set one.

    The email is sent inside the transaction: if the mail server refuses it, no member is
    created and the error says so (``ValidationError`` on ``email``).
    """
    if not email:
        raise ValidationError({"email": "an invitation needs an email address"})
    with transaction.atomic():
        member = member_create(actor=actor, username=username, email=email, role=role)
        invitation = invitation_send(actor=actor, member=member)
    return invitation


def invitation_send(*, actor: Principal, member: Member) -> Invitation:
    """Send ``member`` a new invitation link, withdrawing any earlier one that is still pending.

    Refused for a member who has already set a password or is not active.
    """
    require_administrator(actor)
    email = str(member.user.email or "")
    if not email:
        raise ValidationError({"email": f"{member.username} has no email address to invite"})
    if member.offboarded_at is not None:
        raise ValidationError(f"{member.username} has left (offboarded); add them again as a new member")
    if not (member.is_active and member.user.is_active):
        raise ValidationError(f"{member.username} is suspended; reactivate them before inviting")
    if member.user.has_usable_password():
        raise ValidationError(f"{member.username} has already set a password")
    token = bearer.mint(INVITATION_PREFIX)
    with transaction.atomic():
        now = timezone.now()
        Invitation.objects.filter(member=member, accepted_at__isnull=True, withdrawn_at__isnull=True).update(
            withdrawn_at=now
        )
        invitation = Invitation.objects.create(
            member=member,
            email=email,
            token_digest=token.digest,
            invited_by=actor if isinstance(actor, Member) else None,
            expires_at=now + invitation_lifetime(),
        )
        link = settings.BRAIN_BASE_URL + reverse("accounts:invitation", args=[token.raw])
        try:
            send_mail(
                subject="You are invited to Brain",
                message=(
                    f"Hello {member.username},\n\n"
                    f"You have been invited to your organisation's Brain. Choose a password here:\n\n{link}\n\n"
                    f"The link works once and expires on {invitation.expires_at:%Y-%m-%d %H:%M} UTC.\n"
                    "If you did not expect this, ignore this message.\n"
                ),
                from_email=None,
                recipient_list=[email],
            )
        except OSError as error:
            raise ValidationError({"email": f"the invitation email could not be sent: {error}"}) from None
        audit_record(actor=actor, action="member.invite", target_type="member", target=member.username,
                     metadata={"expires_at": invitation.expires_at.isoformat()})  # fmt: skip
    return invitation


def invitation_pending(raw: str) -> Invitation | None:
    """The pending, unexpired invitation behind a presented link token, or None."""
    if not raw.startswith(INVITATION_PREFIX):
        return None
    invitation = (
        Invitation.objects.select_related("member__user")
        .filter(token_digest=bearer.digest(raw), accepted_at__isnull=True, withdrawn_at__isnull=True)
        .first()
    )
    if invitation is None or invitation.expires_at <= timezone.now():
        return None
    member = invitation.member
    user = member.user
    if not (member.is_active and user.is_active):
        return None
    # An invitation sets the first password of the address it was sent to. Once the person has
    # a password (set by an administrator, or signed in through SSO and set one), or the address
    # was corrected, an old link must not replace it: whoever held the link would take over.
    if user.has_usable_password() or invitation.email.casefold() != (user.email or "").casefold():
        return None
    return invitation


class InvitationUnusable(ValidationError):
    """The link was used, withdrawn, has expired or never existed (one message for all four)."""

    def __init__(self) -> None:
        super().__init__(
            "this invitation link has already been used or has expired; ask an administrator for a new one"
        )


def invitation_accept(*, raw: str, password: str) -> Member:
    """Set the invited member's password once and close the invitation.

    Raises ``InvitationUnusable`` for any link that is not pending, and ``ValidationError``
    on ``password`` when it breaks the password rules (the invitation stays pending).
    """
    with transaction.atomic():
        found = invitation_pending(raw)
        if found is None:
            raise InvitationUnusable
        invitation = Invitation.objects.select_for_update().select_related("member__user").get(pk=found.pk)
        if invitation.accepted_at or invitation.withdrawn_at:
            raise InvitationUnusable  # accepted by a concurrent request a moment ago
        user = invitation.member.user
        try:
            password_validation.validate_password(password, user=user)
        except ValidationError as error:
            raise ValidationError({"password": error.messages}) from None
        user.set_password(password)
        user.save(update_fields=["password"])
        invitation.accepted_at = timezone.now()
        invitation.save(update_fields=["accepted_at"])
        audit_record(actor=invitation.member, action="member.invite_accepted", target_type="member",
                     target=invitation.member.username)  # fmt: skip
    return invitation.member


# --------------------------------------------------------------------------- suspension


@dataclass(frozen=True)
class Suspension:
    """What one suspension ended, by credential kind."""

    sessions: int = 0
    oauth_tokens: int = 0
    personal_tokens: int = 0
    question_credentials: int = 0
    builds_cancelled: int = 0
    builds_reassigned: int = 0
    invitations_withdrawn: int = 0
    invitations_sent_withdrawn: int = 0  # sent by them and not yet accepted
    issued_credentials: int = 0  # question credentials they issued to others (they saw the secret)
    inbound_addresses: int = 0

    def as_metadata(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _refuse_self_or_last_owner(actor: Principal, member: Member) -> None:
    if isinstance(actor, Member) and actor.pk == member.pk:
        raise ValidationError("you cannot suspend or offboard yourself; ask another administrator")
    if member.role == Member.Role.OWNER and not may_touch_ownership(actor):
        raise ValidationError("only an owner can suspend or offboard an owner")
    refuse_losing_the_last_owner(member)  # locks the owners inside the caller's transaction


def _lock(member: Member) -> Member:
    return Member.objects.select_for_update().select_related("user").get(pk=member.pk)


def _suspend_locked(*, actor: Principal, member: Member, reassign_to: Member | None) -> Suspension:
    """Turn every credential kind of a locked member off; the caller audits."""
    member.is_active = False
    member.save(update_fields=["is_active"])
    user = member.user
    user.is_active = False  # the session backend refuses the user from the next request on
    user.save(update_fields=["is_active"])
    cancelled, reassigned = builds_hand_over(actor=actor, member=member, to=reassign_to)
    withdrawn = Invitation.objects.filter(member=member, accepted_at__isnull=True, withdrawn_at__isnull=True).update(
        withdrawn_at=timezone.now()
    )
    sent_withdrawn, issued = _withdraw_what_they_issued(member)
    return Suspension(
        sessions=end_all_sessions(user),
        oauth_tokens=tokens_revoke_all(member=member),
        personal_tokens=api_tokens_revoke_all(member=member),
        question_credentials=question_credentials_revoke_all(member=member),
        issued_credentials=issued,
        builds_cancelled=cancelled,
        builds_reassigned=reassigned,
        invitations_withdrawn=withdrawn,
        invitations_sent_withdrawn=sent_withdrawn,
        inbound_addresses=inbound_addresses_retire(member=member),
    )


def _withdraw_what_they_issued(member: Member) -> tuple[int, int]:
    """Withdraw the open invitations ``member`` sent and revoke the question credentials they
    issued to others; returns both counts. What they set in motion goes with them: an
    invitation they sent (an administrator's role included) would still make an account after
    they are gone, and they saw each credential's raw value when they issued it."""
    sent = Invitation.objects.filter(invited_by=member, accepted_at__isnull=True, withdrawn_at__isnull=True).update(
        withdrawn_at=timezone.now()
    )
    return sent, question_credentials_revoke_issued_by(member)


def member_suspend(*, actor: Principal, member: Member, reassign_to: Member | None = None) -> Suspension:
    """Suspend ``member``: every session and credential of theirs stops on the next request.

    Ends their sessions; revokes their OAuth tokens, personal tokens and question
    credentials, and the question credentials they issued to others (they saw those secrets);
    cancels their open builds (or reassigns them to ``reassign_to``), which revokes those
    builds' credentials; withdraws a pending invitation to them and those they sent. Their grants,
    pages, memories and history stay, so ``member_reactivate`` restores access to content
    — but never the revoked credentials.
    """
    require_administrator(actor)
    with transaction.atomic():
        _refuse_self_or_last_owner(actor, member)
        locked = _lock(member)
        if not locked.is_active and not locked.user.is_active:
            raise ValidationError(f"{locked.username} is already suspended")
        ended = _suspend_locked(actor=actor, member=locked, reassign_to=reassign_to)
        audit_record(actor=actor, action="member.suspend", target_type="member", target=locked.username,
                     metadata=ended.as_metadata())  # fmt: skip
    return ended


def member_reactivate(*, actor: Principal, member: Member) -> Member:
    """Let a suspended member back in: content access returns through their grants; credentials do not."""
    require_administrator(actor)
    with transaction.atomic():
        locked = _lock(member)
        # Who may take an owner's access away may give it back, and nobody else: an admin
        # reactivating an owner whom an owner had suspended undid what only owners may do.
        if locked.role == Member.Role.OWNER and not may_touch_ownership(actor):
            raise ValidationError("only an owner can reactivate an owner")
        if locked.offboarded_at is not None:
            raise ValidationError(f"{locked.username} has left (offboarded); add them again as a new member")
        if locked.is_active and locked.user.is_active:
            raise ValidationError(f"{locked.username} is not suspended")
        locked.is_active = True
        locked.save(update_fields=["is_active"])
        locked.user.is_active = True
        locked.user.save(update_fields=["is_active"])
        audit_record(actor=actor, action="member.reactivate", target_type="member", target=locked.username)
    return locked


def service_account_change(
    *, actor: Principal, account: ServiceAccount, description: str, is_active: bool
) -> ServiceAccount:
    """Change a service account (``grants.services.service_account_update``); deactivating it
    also revokes its question credentials, so reactivating it brings none of them back — as
    for a suspended member. Its mirrors pause while it is inactive (``mirror.services``)."""
    with transaction.atomic():
        was_active = ServiceAccount.objects.select_for_update().get(pk=account.pk).is_active
        changed = service_account_update(actor=actor, account=account, description=description, is_active=is_active)
        if was_active and not changed.is_active:
            revoked = question_credentials_revoke_all(service_account=changed)
            audit_record(actor=actor, action="service_account.deactivate", target_type="service_account",
                         target=changed.name, metadata={"question_credentials": revoked})  # fmt: skip
    return changed


# --------------------------------------------------------------------------- offboarding


@dataclass(frozen=True)
class Offboarding:
    """What offboarding did, and what is left for an administrator to hand on."""

    memories_deleted: int
    export_sent_to: str
    owned_pages: list[str] = field(default_factory=list)
    suspension: Suspension = field(default_factory=Suspension)
    owned_unseen: int = 0  # live pages they own that the administrator cannot read (not named)


def owned_page_paths(member: Member, *, viewer: Principal) -> tuple[list[str], int]:
    """The live pages ``member`` owns (to be handed to a new owner through a build): the paths
    ``viewer`` may read, and how many others. Being an administrator confers no content
    access: a restricted page's path is not shown to one who cannot read it."""
    live = Page.objects.filter(owner=member, current_revision__isnull=False)
    seen = list(live.visible_to(viewer, "read").order_by("path").values_list("path", flat=True))
    return seen, live.count() - len(seen)


def member_offboard(
    *, actor: Principal, member: Member, send_export: bool, reassign_to: Member | None = None
) -> Offboarding:
    """``member`` leaves: suspended (if not already), personal layer deleted, shared memories kept.

    With ``send_export`` their personal memories are first emailed to their own address as
    a JSON-lines attachment (the administrator never sees them); if the mail cannot be
    sent, nothing is deleted. What they shared stays, shown as written by a former member.
    Pages they own are listed for reassignment (ownership changes through a reviewed build).
    """
    require_administrator(actor)
    with transaction.atomic():
        _refuse_self_or_last_owner(actor, member)
        locked = _lock(member)
        if locked.offboarded_at is not None:
            raise ValidationError(f"{locked.username} has already been offboarded")
        if locked.is_active or locked.user.is_active:
            ended = _suspend_locked(actor=actor, member=locked, reassign_to=reassign_to)
        else:  # suspended before: what they issued may predate that suspension's rules
            sent_withdrawn, issued = _withdraw_what_they_issued(locked)
            ended = Suspension(invitations_sent_withdrawn=sent_withdrawn, issued_credentials=issued)
        sent_to = _send_personal_export(locked) if send_export else ""
        deleted = personal_layer_delete(member=locked)
        # A person who left keeps no Slack account bound to their row: it would still be
        # "linked" (and refuse a new member the same account) when they come back.
        slack_unlinked = locked.slack_user_id is not None
        locked.offboarded_at = timezone.now()
        locked.slack_user_id = None
        locked.save(update_fields=["offboarded_at", "slack_user_id"])
        owned, owned_unseen = owned_page_paths(locked, viewer=actor)
        audit_record(
            actor=actor,
            action="member.offboard",
            target_type="member",
            target=locked.username,
            metadata={"memories_deleted": deleted, "export_sent": bool(sent_to),
                      "owned_pages": len(owned) + owned_unseen, "slack_unlinked": slack_unlinked,
                      **ended.as_metadata()},
        )  # fmt: skip
    return Offboarding(memories_deleted=deleted, export_sent_to=sent_to, owned_pages=owned, suspension=ended,
                       owned_unseen=owned_unseen)  # fmt: skip


def _send_personal_export(member: Member) -> str:
    """Email ``member`` their personal memories; returns the address, or raises ``ValidationError``."""
    address = str(member.user.email or "")
    if not address:
        raise ValidationError({"send_export": f"{member.username} has no email address to send the export to"})
    body = "".join(export_lines(member, workspace="personal"))
    message = EmailMessage(
        subject="Your Brain memories",
        body=(
            f"Hello {member.username},\n\nYour account is being closed. Attached are the memories you kept in your "
            "personal layer, one JSON object per line. They are deleted from Brain now; what you shared with "
            "the team stays.\n"
        ),
        to=[address],
    )
    message.attach("brain-personal-memories.jsonl", body.encode("utf-8"), "application/x-ndjson")
    try:
        message.send()
    except OSError as error:
        raise ValidationError({"send_export": f"the export could not be emailed: {error}"}) from None
    return address


def describe(member: Member, *, viewer: Principal) -> dict[str, Any]:
    """The state ``viewer`` (an administrator) sees before suspending or offboarding ``member``."""
    from builds.models import Build
    from memory.services import personal_layer_count

    owned, owned_unseen = owned_page_paths(member, viewer=viewer)
    return {
        "personal_memories": personal_layer_count(member),
        "issued_credentials": [
            f"{credential.name} ({credential.prefix}…, held by {credential.member or credential.service_account})"
            for credential in question_credentials_issued_by(member)
        ],
        "invitations_sent": Invitation.objects.filter(
            invited_by=member, accepted_at__isnull=True, withdrawn_at__isnull=True, expires_at__gt=timezone.now()
        ).count(),
        "owned_pages": owned,
        "owned_unseen": owned_unseen,
        "open_builds": Build.objects.filter(
            requester=member, status__in=[Build.Status.OPEN, Build.Status.AWAITING_REVIEW]
        ).count(),
    }
