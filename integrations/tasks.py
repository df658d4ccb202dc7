"""Celery tasks of the integrations: ids only (Slack's response URL stays in the database)."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="integrations.slack_answer", ignore_result=True, acks_late=True, max_retries=20)
def slack_answer_task(self: Task[Any, None], delivery_id: int) -> None:
    """Answer and post; while another worker answers it, or Slack cannot be reached, try
    again in 15 s (20 times: five minutes, well inside the response URL's 30)."""
    from integrations.slack import slack_answer

    outcome = slack_answer(delivery_id)
    logger.info("slack delivery %s: %s", delivery_id, outcome)
    if outcome in ("pending", "undelivered"):
        raise self.retry(countdown=15)


@shared_task(name="integrations.slack_sweep", ignore_result=True)
def slack_deliveries_sweep_task() -> None:
    from integrations.slack import slack_deliveries_sweep

    count = slack_deliveries_sweep()
    if count:
        logger.info("slack sweep re-sent %d deliveries", count)
