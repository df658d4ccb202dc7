"""Celery tasks of document ingest: extraction ids in, nothing else."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="ingest.extract", ignore_result=True, acks_late=True)
def extraction_run_task(extraction_id: int) -> None:
    from ingest.services import extraction_run

    outcome = extraction_run(extraction_id)
    logger.info("extraction %s: %s", extraction_id, outcome)


@shared_task(name="ingest.sweep", ignore_result=True)
def extractions_sweep_task() -> None:
    from ingest.services import extractions_sweep

    count = extractions_sweep()
    if count:
        logger.info("ingest sweep re-enqueued %d extraction(s)", count)
