"""Personal API tokens (``bmt_``): issued by their member, shown once, stored as SHA-256, scoped, revoked."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone

from brain import bearer, callers
from brain.callers import Caller
from brain.text.secrets import NulRefused, SecretRefused, refuse
from grants.audit import audit_record
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.services import _require_member

TOKEN_PREFIX = "bmt_"  # noqa: S105 (a public marker that tells token kinds apart, not a secret)


def api_token_issue(*, actor: Member, name: str, scopes: list[str] | None = None) -> tuple[Any, str]:
    """Issue a personal API token; returns (row, raw token). The raw token is shown once.

    ``scopes`` (default: memory, corpus:read, sources:write) limit what it may do below the
    member's own grants; an unknown scope is ``MemoryInvalid`` naming it.
    """
    from memory.models import PERSONAL_TOKEN_SCOPES, MemoryApiToken, default_personal_scopes

    _require_member(actor)
    label = (name or "").strip()
    if not label or len(label) > 80:
        raise MemoryInvalid("name the token (1 to 80 characters)")
    try:
        refuse(label, field="name")
    except (SecretRefused, NulRefused) as refused:
        raise MemoryInvalid(str(refused)) from None
    chosen = sorted(set(default_personal_scopes() if scopes is None else scopes))
    unknown = [scope for scope in chosen if scope not in PERSONAL_TOKEN_SCOPES]
    if unknown or not chosen:
        raise MemoryInvalid(f"scopes must be some of {', '.join(PERSONAL_TOKEN_SCOPES)}")
    token = bearer.mint(TOKEN_PREFIX)
    with transaction.atomic():
        row = MemoryApiToken.objects.create(
            member=actor, name=label, token_hash=token.digest, prefix=token.shown, scopes=chosen
        )
        audit_record(actor=actor, action="personal_token.issue", target_type="personal_token", target=str(row.pk),
                     metadata={"name": label, "prefix": token.shown, "scopes": chosen})  # fmt: skip
    return row, token.raw


def api_token_revoke(*, actor: Member, token_id: int) -> None:
    """Revoke one of ``actor``'s tokens; another member's token is ``DoesNotExist``, like a missing one."""
    from memory.models import MemoryApiToken

    with transaction.atomic():
        updated = MemoryApiToken.objects.filter(pk=token_id, member=actor, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if not updated:
            raise MemoryApiToken.DoesNotExist("no such token")
        audit_record(actor=actor, action="personal_token.revoke", target_type="personal_token", target=str(token_id))


def api_token_resolve(raw: str) -> Caller | None:
    """The ``personal`` caller behind a live token of an active member (``brain.callers`` resolver).

    Notes the token's use (at most once a minute, so a busy script does not write per call).
    One hand-written query (token, member and user, active ones only): it runs on every REST
    call, and the same read through the ORM cost two milliseconds to compile (as the OAuth
    token lookup in ``oauth.tokens`` found).
    """
    from django.contrib.auth import get_user_model

    from brain.rows import columns, fetch_one, hydrate
    from memory.models import MemoryApiToken

    if not raw.startswith(TOKEN_PREFIX):
        return None
    User = get_user_model()
    sql = f"""SELECT t.id, t.scopes, t.last_used_at, {columns(Member, "m")}, {columns(User, "u")}
                FROM {MemoryApiToken._meta.db_table} t
                JOIN {Member._meta.db_table} m ON m.id = t.member_id AND m.is_active
                JOIN {User._meta.db_table} u ON u.id = m.user_id AND u.is_active
               WHERE t.token_hash = %s AND t.revoked_at IS NULL"""  # noqa: S608 - only model table/column names
    row = fetch_one(sql, [bearer.digest(raw)])
    if row is None:
        return None
    token_id, scopes, last_used_at = row[0], row[1], row[2]
    member, user = hydrate(row, [Member, User], start=3)
    member.user = user  # type: ignore[attr-defined]
    now = timezone.now()
    if last_used_at is None or now - last_used_at > dt.timedelta(minutes=1):
        MemoryApiToken.objects.filter(pk=token_id).update(last_used_at=now)
    assert isinstance(member, Member)
    return Caller(principal=member, kind=callers.PERSONAL, scopes=frozenset(scopes))
