"""Keeping stored vectors current: fill the missing, replace those of another model.

A row gets no vector when the embedder is down at write time, and keeps a vector of the
old model after ``BRAIN_EMBEDDINGS_*`` changes. Either way its semantic search is wrong
until it is embedded again — so dense search arms only compare vectors of the current
model (``current_model_q``), and a periodic task calls ``refresh_stale_vectors`` for
memories and for document chunks. Page chunks written while the embedder was down are
filled the same way (``missing_only``); after a model change they are re-embedded by a
``build_reembed`` build instead, whose record says how many vectors changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import models, transaction
from django.db.models import Q

from brain import embeddings

logger = logging.getLogger(__name__)


def current_model_q() -> Q:
    """Rows whose vector exists and was made by the model this process embeds queries with."""
    return Q(embedding__isnull=False, embedding_model=embeddings.model_id())


def refresh_stale_vectors(
    model: type[models.Model],
    *,
    text_field: str,
    embed_input: Callable[[str], str] = lambda text: text,
    batch: int = 200,
    seconds: float = 120.0,
    missing_only: bool = False,
    row_input: Callable[[Any], str] | None = None,
) -> int:
    """Embed rows of ``model`` with no vector or another model's, batch by batch, until none
    are left or ``seconds`` have passed; returns how many rows were written.

    ``embed_input`` turns the row's ``text_field`` into what is embedded (``row_input``, when
    given, builds it from the whole row instead). A row whose text
    changed while its batch was being embedded is left for the next run (the write is
    conditional on the text it was computed from). Stops quietly, keeping what it wrote,
    when the embedder is unavailable.
    """
    current = embeddings.model_id()
    # missing_only: rows of another model are not ours to replace (page chunks change model
    # through a reviewed ``build_reembed``, whose record says how many vectors changed).
    stale = Q(embedding__isnull=True) if missing_only else Q(embedding__isnull=True) | ~Q(embedding_model=current)
    manager: Any = model._default_manager
    deadline = time.monotonic() + seconds
    written = 0
    skipped: set[Any] = set()
    while time.monotonic() < deadline:
        rows = list(manager.filter(stale).exclude(pk__in=skipped).order_by("pk")[:batch])
        if not rows:
            break
        texts = [getattr(row, text_field) for row in rows]
        inputs = [row_input(row) for row in rows] if row_input else [embed_input(text) for text in texts]
        try:
            vectors = embeddings.embed(inputs)
        except embeddings.EmbeddingError:
            logger.warning("vector refresh of %s paused: the embedder is unavailable", model._meta.label)
            break
        with transaction.atomic():
            for row, text, vector in zip(rows, texts, vectors, strict=True):
                updated = manager.filter(stale, pk=row.pk, **{text_field: text}).update(
                    embedding=[float(value) for value in vector], embedding_model=current
                )
                if updated:
                    written += 1
                else:
                    skipped.add(row.pk)  # changed meanwhile: its own write path re-embeds it
    return written
