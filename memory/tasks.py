"""Celery tasks of the memory layer: nothing but ids and counts cross the queue."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="memory.backfill_embeddings", ignore_result=True)
def memory_backfill_embeddings_task() -> None:
    """Every few minutes: embed memories captured while the embedder was down."""
    from memory.services import memory_backfill_embeddings

    filled = memory_backfill_embeddings()
    if filled:
        logger.info("memory backfill embedded %d memories", filled)
