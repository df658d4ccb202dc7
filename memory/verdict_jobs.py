"""Model verdicts as durable jobs: a ``MemoryVerdictJob`` row, a lease, a sweep.

Every background job is a database row first (``brain.jobs``); this is that row for
``memory.settle``. The life of one:

1. ``verdict_job_queue`` — inside the capture's transaction: the row, and the message
   (the job id only) sent once the capture commits. A message that could not be sent is
   not lost work: the row waits for the sweep.
2. ``verdict_job_run`` — a worker claims the row with a conditional UPDATE (queued, or
   running with an expired lease) that sets a fresh lease token; asks the model with no
   lock held (``memory_judge``); then, in one transaction, checks the token is still its
   own, applies the verdict (``verdict_apply``) and marks the row ``done``. A worker that
   outlived its lease applies nothing: the verdict lands exactly once.
3. ``verdict_jobs_sweep`` — beat, every minute (``brain.jobs.resend_lost``): a running row
   whose lease expired (its worker was killed) is sent again at once; a queued row left
   untouched for ``NEVER_STARTED`` is sent again when the queue is idle.

An unreachable model releases the lease (the row goes back to ``queued``) and raises
``LLMError`` for Celery's retry with back-off; the sweep carries on after Celery gives up.
After ``MAX_ATTEMPTS`` claims the row is ``failed`` with the reason, and the memories stay
as the capture left them (flagged, not judged).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from brain.jobs import enqueue_on_commit, resend_lost
from brain.leases import Lease, lease_claim, lease_expired, lease_finish, lease_holds
from brain.llm import LLMError
from memory.models import Memory, MemoryVerdictJob
from memory.verdicts import VERDICTS, memory_judge, verdict_apply

logger = logging.getLogger(__name__)

# Longer than a task may run (Celery's hard time limit, 330 s by default): a live worker
# never loses its lease to the sweep.
LEASE = dt.timedelta(minutes=10)
# A queued row no message has picked up for this long was never sent (or its retry was lost).
NEVER_STARTED = dt.timedelta(minutes=2)
# Claims before the job gives up (an unreachable model, a worker killed every time).
MAX_ATTEMPTS = 6


def verdict_job_queue(new: Memory, old: Memory, similarity: float) -> MemoryVerdictJob:
    """Record the verdict to take on ``new`` and ``old`` and send it once the caller's
    transaction commits. Call inside the capture's transaction."""
    job = MemoryVerdictJob.objects.create(new_memory_id=new.pk, old_memory_id=old.pk, similarity=similarity)
    enqueue_on_commit("memory.settle", job.pk)
    return job


def _claim(job_id: int) -> Lease | None:
    """Take the lease of a queued job, or of a running one whose worker died; None if it is
    finished, gone or held by a live worker."""
    return lease_claim(
        MemoryVerdictJob, job_id, waiting=Q(state=MemoryVerdictJob.State.QUEUED),
        running=Q(state=MemoryVerdictJob.State.RUNNING),
        take={"state": MemoryVerdictJob.State.RUNNING, "updated_at": timezone.now()}, duration=LEASE,
    )  # fmt: skip


def verdict_job_run(job_id: int) -> str:
    """Run one verdict job; returns what happened: the outcome stored on the row (a verdict,
    ``no-verdict``, ``skipped``), ``busy`` (finished, gone or leased elsewhere), ``lease-lost``
    or ``failed``.

    Raises ``LLMError`` when the model is unreachable and attempts remain (the row is
    queued again first, so the task's retry — or the sweep — can claim it).
    """
    lease = _claim(job_id)
    if lease is None:
        return "busy"
    job = MemoryVerdictJob.objects.get(pk=job_id)
    if job.attempts > MAX_ATTEMPTS:
        _fail(lease, f"no verdict after {MAX_ATTEMPTS} attempts; the worker log has the reason")
        return "failed"
    try:
        verdict = memory_judge(new_id=job.new_memory_id, old_id=job.old_memory_id, similarity=job.similarity)
    except LLMError as exc:
        if job.attempts >= MAX_ATTEMPTS:
            _fail(lease, f"the model could not be reached ({type(exc).__name__})")
            return "failed"
        _release(lease)
        raise
    with transaction.atomic():
        if not lease_holds(lease, lock=True):
            # Our lease expired and another worker took the job over (or finished it):
            # it applies the verdict, not us.
            logger.warning("memory verdict job %s: lease lost, nothing applied", job_id)
            return "lease-lost"
        outcome = verdict
        if verdict in VERDICTS:
            outcome = verdict_apply(
                new_id=job.new_memory_id, old_id=job.old_memory_id, similarity=job.similarity, verdict=verdict
            )
        now = timezone.now()
        lease_finish(
            lease, state=MemoryVerdictJob.State.DONE, outcome=outcome, error="", finished_at=now, updated_at=now
        )
    return outcome


def _release(lease: Lease) -> None:
    """Give the lease back after a failure worth retrying: queued again, the attempt counted."""
    lease_finish(lease, state=MemoryVerdictJob.State.QUEUED, updated_at=timezone.now())


def _fail(lease: Lease, reason: str) -> None:
    now = timezone.now()
    lease_finish(lease, state=MemoryVerdictJob.State.FAILED, error=reason[:300], finished_at=now, updated_at=now)
    logger.warning("memory verdict job %s failed: %s", lease.pk, reason)


def verdict_jobs_sweep() -> int:
    """Send again the verdict jobs whose worker died (lease expired) and, when the queue is
    idle, those queued and untouched for ``NEVER_STARTED``; returns how many were sent."""
    now = timezone.now()
    return resend_lost(
        "memory.settle",
        MemoryVerdictJob.objects.all(),
        died=Q(state=MemoryVerdictJob.State.RUNNING) & lease_expired(),
        never_started=Q(state=MemoryVerdictJob.State.QUEUED, updated_at__lt=now - NEVER_STARTED),
    )


def legacy_settle(new_id: Any, old_id: Any, similarity: Any) -> str:
    """A ``memory.settle`` message queued before verdicts had rows (``new_id, old_id,
    similarity``): settled directly, as it was then (``memory_settle`` is idempotent)."""
    from memory.verdicts import memory_settle

    return memory_settle(new_id=new_id, old_id=old_id, similarity=float(similarity))
