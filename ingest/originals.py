"""Captures' uploaded originals, for the corpus export (``corpus.export.register_originals``)."""

from __future__ import annotations

from django.core.files.storage import default_storage

from ingest.models import Document


class DocumentOriginals:
    """Reads ``Document`` rows and their bytes in the default storage. The export has already
    applied the reader's access predicate to the captures it asks about."""

    def names(self, source_ids: list[int]) -> dict[int, str]:
        rows = Document.objects.filter(source_id__in=source_ids).values_list("source_id", "filename", "sha256")
        return {source_id: filename or sha256[:12] for source_id, filename, sha256 in rows}

    def read(self, source_id: int) -> bytes | None:
        document = Document.objects.filter(source_id=source_id).only("storage_name").first()
        if document is None or not default_storage.exists(document.storage_name):
            return None
        with default_storage.open(document.storage_name, "rb") as handle:
            data: bytes = handle.read()
        return data
