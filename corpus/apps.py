from __future__ import annotations

from django.apps import AppConfig


class CorpusConfig(AppConfig):
    """Pages, revisions, chunks, sources and figures: the governed corpus and its single write path."""

    name = "corpus"
    verbose_name = "Corpus"
