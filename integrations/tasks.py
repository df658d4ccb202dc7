"""Celery tasks of the integrations: ids only (Slack's response URL stays in the database)."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="integrations.slack_answer", ignore_result=True, acks_late=True, max_retries=20)
def slack_answer_task(self: Task[Any, None], delivery_id: int, held: str | None = None) -> None:
    """Answer and post under the delivery's lease; while the question is still being answered,
    or Slack cannot be reached, try again in 15 s (20 times: five minutes, well inside the
    response URL's 30), the retry carrying the lease's token (``held``) so no other task for
    the same delivery (a second send, the sweep) can post it meanwhile."""
    from integrations.slack import slack_answer, slack_delivery_claim

    lease = slack_delivery_claim(delivery_id, held)
    outcome = "skipped" if lease is None else slack_answer(delivery_id, lease)
    logger.info("slack delivery %s: %s", delivery_id, outcome)
    if lease is not None and outcome in ("pending", "undelivered"):
        raise self.retry(args=(delivery_id, str(lease.token)), countdown=15)


@shared_task(name="integrations.slack_sweep", ignore_result=True)
def slack_deliveries_sweep_task() -> None:
    from integrations.slack import slack_deliveries_sweep

    count = slack_deliveries_sweep()
    if count:
        logger.info("slack sweep re-sent %d deliveries", count)
