"""Celery tasks of the corpus: the lexical arm's term statistics, on beat."""

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
