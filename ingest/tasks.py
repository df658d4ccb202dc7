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


@shared_task(name="ingest.backfill_embeddings", ignore_result=True)
def source_chunks_backfill_task() -> None:
    """Every few minutes: embed document chunks stored while the embedder was down, or
    embedded by a model no longer configured."""
    from brain.vectors import refresh_stale_vectors
    from corpus.models import SourceChunk

    written = refresh_stale_vectors(SourceChunk, text_field="text")
    if written:
        logger.info("ingest backfill embedded %d document chunks", written)
