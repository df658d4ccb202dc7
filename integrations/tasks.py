"""Celery tasks of the integrations: ids only (Slack's response URL stays in the database)."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="integrations.slack_answer", ignore_result=True, acks_late=True)
def slack_answer_task(delivery_id: int) -> None:
    from integrations.slack import slack_answer

    logger.info("slack delivery %s: %s", delivery_id, slack_answer(delivery_id))
