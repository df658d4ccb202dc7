"""Celery tasks of the corpus, on beat: the lexical arm's term statistics, and vectors for page
chunks written while the embedder was down."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="corpus.lexeme_statistics", ignore_result=True)
def lexeme_statistics_task() -> None:
    from corpus.lexemes import lexeme_statistics_refresh

    counted = lexeme_statistics_refresh()
    if counted is not None:
        logger.info("lexeme statistics recounted over %d chunks", counted)


@shared_task(name="corpus.backfill_embeddings", ignore_result=True)
def chunks_backfill_task() -> None:
    """Every few minutes: embed page chunks stored while the embedder was down."""
    from brain.vectors import refresh_stale_vectors
    from corpus.chunking import ChunkText
    from corpus.models import Chunk

    written = refresh_stale_vectors(
        Chunk, text_field="body", missing_only=True,
        row_input=lambda chunk: ChunkText(heading_path=chunk.heading_path, body=chunk.body).embedding_input,
    )  # fmt: skip
    if written:
        logger.info("corpus backfill embedded %d page chunks", written)
