"""Celery tasks of the memory layer: nothing but ids and counts cross the queue."""

from __future__ import annotations

import logging

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
def memory_settle_task(new_id: str, old_id: str, similarity: float) -> None:
    """Ask the model whether a new memory duplicates or contradicts its neighbour, and apply it."""
    from memory.verdicts import memory_settle

    outcome = memory_settle(new_id=new_id, old_id=old_id, similarity=similarity)
    logger.info("memory settle: %s", outcome)


@shared_task(name="memory.calendars_refresh", ignore_result=True)
def memory_calendars_refresh_task() -> None:
    """Every 15 minutes: refresh the calendar subscriptions that are due (errors land on each row)."""
    from memory.calendars import calendar_refresh_due

    refreshed = calendar_refresh_due()
    if refreshed:
        logger.info("calendar subscriptions refreshed: %d", refreshed)
