"""Writing audit events. Callers pass identifiers and counts, never content or refused values."""

from __future__ import annotations

from typing import Any

from brain.request_context import get_request_id
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
    """Append one audit event, stamped with the current request id (if any)."""
    kind, actor_id, label = actor_fields(actor)
    return AuditEvent.objects.create(
        actor_kind=kind,
        actor_id=actor_id,
        actor_label=label,
        action=action,
        target_type=target_type,
        target=target[:300],
        request_id=get_request_id(),
        metadata=metadata or {},
    )
