"""Celery tasks of the answers app: question ids in, nothing else."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="answers.run", ignore_result=True, acks_late=True)
def question_run_task(question_id: int) -> None:
    from answers.services import question_run

    logger.info("question %s: %s", question_id, question_run(question_id))


@shared_task(name="answers.sweep", ignore_result=True)
def questions_sweep_task() -> None:
    from answers.services import questions_sweep

    count = questions_sweep()
    if count:
        logger.info("answers sweep re-enqueued %d question(s)", count)
