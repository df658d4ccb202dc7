from __future__ import annotations

from django.apps import AppConfig


class IngestConfig(AppConfig):
    """Documents in, citable captures out: storage, extraction with masking, provenance."""

    name = "ingest"
    verbose_name = "Document ingest"

    def ready(self) -> None:
        from corpus.export import register_originals
        from ingest.originals import DocumentOriginals

        register_originals(DocumentOriginals())
