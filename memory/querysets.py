"""Who can see which memory: the layer rule as a query filter.

- ``personal``: only its author (an administrator is no exception);
- ``company``: every active member.
An inactive member, a service account, ``None`` or ``SYSTEM`` see nothing here: memories
belong to people, and no code path reads them "as the system".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db.models import Exists, Q

from grants.principals import Principal
from grants.querysets import RestrictedQuerySet

if TYPE_CHECKING:
    from memory.models import Memory


class MemoryQuerySet(RestrictedQuerySet["Memory"]):
    def restrict(self, principal: Principal, permission: int | str = "read") -> MemoryQuerySet:
        """Memories ``principal`` may read; the reader's own activeness is checked in the query.

        Memories have no grants: the layer decides, and reading is all there is to ask here
        (who may change one is ``memory.services.editable``).
        """
        from grants.models import Member

        if permission not in ("read", 1) or not isinstance(principal, Member):
            return self.none()
        reader_active = Exists(Member.objects.filter(pk=principal.pk, is_active=True, user__is_active=True))
        return self.filter(reader_active).filter(
            Q(workspace="company") | Q(workspace="personal", author_id=principal.pk)
        )

    def get_by_id(self, memory_id: Any) -> Memory:
        """The memory with this id, or ``DoesNotExist`` — a malformed id answers like a missing one."""
        try:
            return self.get(pk=memory_id)
        except (ValidationError, ValueError, TypeError) as exc:
            raise self.model.DoesNotExist("Memory matching query does not exist.") from exc
