"""Principals: who is asking. A member, a service account, or the explicit system actor.

``None`` is never "everything": a missing principal sees nothing. Only ``SYSTEM`` (used
by tasks, migrations and operator commands) bypasses the predicate, and it does so
explicitly at each call site.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeAlias

if TYPE_CHECKING:
    from grants.models import Member, ServiceAccount


class SystemPrincipal:
    """The system itself (Celery tasks, operator commands). Bypasses grants explicitly."""

    _instance: SystemPrincipal | None = None

    def __new__(cls) -> SystemPrincipal:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "SYSTEM"


SYSTEM: Final = SystemPrincipal()

Principal: TypeAlias = "Member | ServiceAccount | SystemPrincipal"


def principal_for_user(user: object) -> Member | None:
    """The active member behind a Django user, or None (anonymous, no member, inactive)."""
    from grants.models import Member

    if user is None or not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return None
    try:
        member: Member = user.member  # type: ignore[attr-defined]
    except Member.DoesNotExist:
        return None
    return member if member.is_active else None


def actor_fields(actor: Principal | None) -> tuple[str, int | None, str]:
    """(kind, id, label) of an actor, for audit rows."""
    from grants.models import Member, ServiceAccount

    if isinstance(actor, Member):
        return "member", actor.pk, actor.username
    if isinstance(actor, ServiceAccount):
        return "service", actor.pk, actor.name
    return "system", None, "system"
