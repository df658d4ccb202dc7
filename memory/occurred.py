"""When a memory may say it happened (``Memory.occurred_at``), checked once for every path."""

from __future__ import annotations

import datetime as dt
from typing import Any

from memory.classify import MemoryInvalid

# When a memory may say it happened. Within Python's and PostgreSQL's shared range with room
# to spare: 9999-12-31T23:59:59-14:00 is year 10000 in UTC, stored, then unreadable — every
# later read of that member's memories (and of the team layer's, if shared) failed.
OCCURRED_YEARS = (1000, 2999)


def checked_occurred_at(value: Any) -> dt.datetime | None:
    """``value`` as an aware datetime within ``OCCURRED_YEARS`` in UTC; ``MemoryInvalid`` otherwise
    (a naive one is taken as UTC)."""
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        raise MemoryInvalid("occurred_at must be a date and time")
    aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    try:
        in_utc = aware.astimezone(dt.UTC)
    except (OverflowError, ValueError):
        in_utc = None
    first, last = OCCURRED_YEARS
    if in_utc is None or not first <= in_utc.year <= last:
        raise MemoryInvalid(f"occurred_at must be between the years {first} and {last}")
    return aware


def occurred_or_none(value: dt.datetime | None) -> dt.datetime | None:
    """``value`` if a memory may carry it, else None: for dates read from headers and files that
    are only a hint (a mail's ``Date:``), where a bogus one must not refuse what it dates."""
    try:
        return checked_occurred_at(value)
    except MemoryInvalid:
        return None
