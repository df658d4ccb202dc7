"""Celery tasks of the memory layer: nothing but ids and counts cross the queue."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from brain.llm import LLMError

logger = logging.getLogger(__name__)


@shared_task(name="memory.backfill_embeddings", ignore_result=True)
def memory_backfill_embeddings_task() -> None:
    """Every few minutes: embed memories captured while the embedder was down."""
    from memory.services import memory_backfill_embeddings

    filled = memory_backfill_embeddings()
    if filled:
        logger.info("memory backfill embedded %d memories", filled)


@shared_task(name="memory.insights", ignore_result=True)
def memory_insights_task() -> None:
    """Hourly: write and deliver last week's insights that are due (once per layer and week)."""
    from memory.insights import insights_run

    outcome = insights_run()
    if outcome["written"]:
        logger.info("memory insights: %s", outcome)


@shared_task(
    name="memory.settle",
    ignore_result=True,
    acks_late=True,
    autoretry_for=(LLMError,),
    retry_backoff=30,
    max_retries=3,
)
def memory_settle_task(job_id: int | str, *legacy: Any) -> None:
    """Run verdict job ``job_id`` (``memory.verdict_jobs``): ask the model whether a new memory
    duplicates or contradicts its neighbour, and apply the verdict once.

    A message queued before verdicts had rows carries ``new_id, old_id, similarity``; it is
    settled directly, as it was then.
    """
    from memory.verdict_jobs import legacy_settle, verdict_job_run

    outcome = legacy_settle(job_id, *legacy) if legacy else verdict_job_run(int(job_id))
    logger.info("memory settle %s: %s", job_id, outcome)


@shared_task(name="memory.verdicts_sweep", ignore_result=True)
def memory_verdicts_sweep_task() -> None:
    """Every minute: send again the verdict jobs whose worker died or whose message was lost."""
    from memory.verdict_jobs import verdict_jobs_sweep

    count = verdict_jobs_sweep()
    if count:
        logger.info("memory verdict sweep re-enqueued %d job(s)", count)


@shared_task(name="memory.calendar_refresh", ignore_result=True)
def memory_calendar_refresh_task(subscription_id: int) -> None:
    """A subscription its person just added or asked to refresh (``calendar_refresh_requested``)."""
    from memory.calendars import calendar_refresh_requested

    calendar_refresh_requested(subscription_id)


@shared_task(name="memory.calendars_refresh", ignore_result=True)
def memory_calendars_refresh_task() -> None:
    """Every 15 minutes: refresh the calendar subscriptions that are due (errors land on each row)."""
    from memory.calendars import calendar_refresh_due

    refreshed = calendar_refresh_due()
    if refreshed:
        logger.info("calendar subscriptions refreshed: %d", refreshed)


@shared_task(
    name="memory.vault_import",
    bind=True,
    ignore_result=True,
    acks_late=True,
    soft_time_limit=30 * 60,
    time_limit=30 * 60 + 60,
    max_retries=None,
)
def memory_vault_import_task(self: Any, job_id: str) -> None:
    """Run background import ``job_id`` (``memory.vault_jobs``): a vault or Notion export too
    large for the web request, all or nothing, its progress on its row. While every import
    slot is taken it asks again in ``WAIT_SECONDS`` (the row stays queued meanwhile)."""
    from celery.exceptions import SoftTimeLimitExceeded

    from memory.vault_jobs import WAIT_SECONDS, vault_import_run

    outcome = vault_import_run(job_id, timed_out=(SoftTimeLimitExceeded,))
    logger.info("memory vault import %s: %s", job_id, outcome)
    if outcome == "waiting":
        raise self.retry(countdown=WAIT_SECONDS)


@shared_task(name="memory.vault_imports_sweep", ignore_result=True)
def memory_vault_imports_sweep_task() -> None:
    """Every minute: send again the imports whose worker died or whose message was lost."""
    from memory.vault_jobs import vault_imports_sweep

    count = vault_imports_sweep()
    if count:
        logger.info("memory vault import sweep re-enqueued %d import(s)", count)
