"""Captures' uploaded originals, for the corpus export (``corpus.export.register_originals``)."""

from __future__ import annotations

import logging

from django.core.files.storage import default_storage

from ingest.models import Document

logger = logging.getLogger(__name__)


class DocumentOriginals:
    """Reads ``Document`` rows and their bytes in the default storage. The export has already
    applied the reader's access predicate to the captures it asks about."""

    def names(self, source_ids: list[int]) -> dict[int, str]:
        """Only originals whose bytes are in storage: the export's file count and README are
        made from these names before any file is read, and must match what it then holds."""
        rows = Document.objects.filter(source_id__in=source_ids).values_list(
            "source_id", "filename", "sha256", "storage_name"
        )
        names: dict[int, str] = {}
        for source_id, filename, sha256, storage_name in rows:
            if default_storage.exists(storage_name):
                names[source_id] = filename or sha256[:12]
            else:
                logger.warning("the original of capture %s is missing from storage (%s)", source_id, storage_name)
        return names

    def read(self, source_id: int) -> bytes | None:
        document = Document.objects.filter(source_id=source_id).only("storage_name").first()
        if document is None or not default_storage.exists(document.storage_name):
            return None
        with default_storage.open(document.storage_name, "rb") as handle:
            data: bytes = handle.read()
        return data
