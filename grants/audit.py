"""Writing audit events. Callers pass identifiers and counts, never content or refused values.

Defence in depth: the target and every string in the metadata pass the secret detector,
because an identifier — a page path, a capture key, a tag — can itself be the secret.
"""

from __future__ import annotations

from typing import Any

from brain.request_context import get_request_id, signed_in_login
from brain.text.secrets import redact
from grants.models import AuditEvent
from grants.principals import Principal, actor_fields


def audit_record(
    *,
    actor: Principal | None,
    action: str,
    target_type: str = "",
    target: str = "",
    metadata: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event, stamped with the current request id (if any).

    An event with no member or service account behind it, recorded while someone is signed
    in (a superuser without a member row in the admin, a login without one changing its
    password), names that login (kind ``user``), not ``system``: "system" is left for what no
    person did (workers, sweeps, commands, a client acting with its own credential).
    """
    kind, actor_id, label = actor_fields(actor)
    if kind == "system" and (login := signed_in_login()) is not None:
        kind, actor_id, label = "user", login.pk, str(login.get_username())
    return AuditEvent.objects.create(
        actor_kind=kind,
        actor_id=actor_id,
        actor_label=label,
        action=action,
        target_type=target_type,
        target=redact(target)[:300],
        request_id=get_request_id(),
        metadata=_redacted(metadata or {}),
    )


def _redacted(value: Any) -> Any:
    """``value`` with every string inside it masked."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value
