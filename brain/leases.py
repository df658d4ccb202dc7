"""Leased jobs: one model shape and one claim / hold / finish API for every kind of job.

A job is a row (a question, an extraction, a build step, a memory verdict). A worker runs
it only while it holds the row's **lease**: a fresh random token and an expiry, taken by
one conditional UPDATE. The rules, for every job kind:

- a claim succeeds only on a waiting row, or a running one whose lease has expired (its
  worker died or hung); it sets a new token, counts an attempt and sets the expiry;
- two workers claiming at once: exactly one UPDATE matches, the other gets ``None``;
- a worker writes its result (``lease_finish``) or changes shared state (``lease_holds``
  with a row lock, inside its transaction) only while the row still carries *its* token: a
  worker that outlived its lease, after another took the job over, writes nothing;
- a sweep re-sends rows whose lease expired (``lease_expired``) at once, and rows that
  never started only when the queue is idle (``brain.jobs.resend_lost``);
- expiry is judged by the **database's** clock, never a worker's: a worker whose clock runs
  ahead would otherwise take over a lease that is still alive, and one running behind would
  hold a dead one for longer than it was granted.

``tests/brain/test_leases.py`` checks these rules as a property (two workers, expiry, late
finish refused) on a real job table.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now


class LeasedJob(models.Model):
    """The lease columns every job row carries (each kind adds its own state and payload)."""

    attempts = models.PositiveIntegerField(default=0)
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


@dataclass(frozen=True)
class Lease:
    """What a successful claim hands its worker: the row, the token it must still hold, the attempt."""

    model: type[LeasedJob]
    pk: Any
    token: uuid.UUID
    attempt: int


def lease_expired() -> Q:
    """Rows whose lease ran out by the database's clock (a running row without one counts as
    expired, never as held)."""
    return Q(lease_expires_at__lt=Now()) | Q(lease_expires_at__isnull=True)


def _expiry(duration: dt.timedelta) -> ExpressionWrapper[CombinedExpression]:
    """``duration`` from now, by the database's clock."""
    return ExpressionWrapper(Now() + duration, output_field=DateTimeField())


def lease_claim(
    model: type[LeasedJob],
    pk: Any,
    *,
    waiting: Q,
    running: Q,
    take: dict[str, Any],
    duration: dt.timedelta,
) -> Lease | None:
    """Take the lease of row ``pk`` when it is ``waiting``, or ``running`` with an expired lease.

    ``take`` are the fields that mark the row as running (e.g. ``{"status": "running"}``).
    One conditional UPDATE: of two workers claiming at once exactly one succeeds. Returns
    ``None`` when the row is finished, gone or held by a live worker.
    """
    token = uuid.uuid4()
    claimed = (
        model._default_manager.filter(pk=pk)
        .filter(waiting | (running & lease_expired()))
        .update(lease_token=token, lease_expires_at=_expiry(duration), attempts=F("attempts") + 1, **take)
    )
    if claimed != 1:
        return None
    attempt = model._default_manager.filter(pk=pk, lease_token=token).values_list("attempts", flat=True).first()
    if attempt is None:  # taken over between the two statements (the lease was shorter than that)
        return None
    return Lease(model=model, pk=pk, token=token, attempt=int(attempt))


def lease_claim_unfinished(model: type[LeasedJob], pk: Any, *, unfinished: Q, duration: dt.timedelta) -> Lease | None:
    """``lease_claim`` for a job row without a status column (a delivery to send): waiting
    while ``unfinished`` and unheld, running while ``unfinished`` and held. The holder marks
    it finished through ``lease_finish``."""
    return lease_claim(
        model,
        pk,
        waiting=unfinished & Q(lease_token__isnull=True),
        running=unfinished & Q(lease_token__isnull=False),
        take={},
        duration=duration,
    )


def lease_holds(lease: Lease, *, lock: bool = False) -> bool:
    """Whether ``lease`` is still this row's; with ``lock`` (inside a transaction) the row stays
    locked, so nobody can take it over before the caller's writes commit."""
    rows = lease.model._default_manager.filter(pk=lease.pk, lease_token=lease.token)
    if lock:
        rows = rows.select_for_update()
    return rows.exists()


def lease_extend(lease: Lease, duration: dt.timedelta) -> bool:
    """Push the expiry out (a long step still alive); False when the lease is no longer held."""
    rows = lease.model._default_manager.filter(pk=lease.pk, lease_token=lease.token)
    return bool(rows.update(lease_expires_at=_expiry(duration)))


def lease_finish(lease: Lease, **fields: Any) -> bool:
    """Write ``fields`` and release the lease, only while ``lease`` is held; False (nothing
    written) for a worker whose lease was taken over."""
    rows = lease.model._default_manager.filter(pk=lease.pk, lease_token=lease.token)
    return bool(rows.update(lease_token=None, lease_expires_at=None, **fields))
