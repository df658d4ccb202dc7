"""Celery tasks of the build driver: ids in, driver out, nothing kept in memory."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="builds.job_step", ignore_result=True, acks_late=True)
def build_job_step_task(job_id: int) -> None:
    """One leased step of a build job (safe to run twice: the lease decides)."""
    from builds.driver import job_step

    outcome = job_step(job_id)
    logger.info("build job %s step: %s", job_id, outcome)


@shared_task(name="builds.jobs_sweep", ignore_result=True)
def build_jobs_sweep_task() -> None:
    """Every minute: re-enqueue unfinished jobs whose lease is free or expired."""
    from builds.driver import jobs_sweep

    count = jobs_sweep()
    if count:
        logger.info("build sweep re-enqueued %d job(s)", count)
