"""Disk full on the media storage during an upload: a clear error, no orphan rows, no partial file.

``FillingStorage`` is the real ``FileSystemStorage`` on a temporary folder whose disk fills
up part-way through a write: Django creates the file and writes the first bytes, then the
write fails with ENOSPC — exactly what a full disk does.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.files.base import ContentFile, File
from django.core.files.storage import FileSystemStorage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from corpus.models import Source
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue
from ingest.models import Document, Extraction
from ingest.services import document_ingest, extraction_run
from memory.tokens import api_token_issue
from tests.base import BrainTestCase

ROOM = 64  # bytes the disk takes before it is full
DATA = b"# Board minutes\n\nThe board approved the new pricing for the Team plan in March.\n" * 20


class FillingContent(ContentFile):
    """A file whose writing runs out of disk after ``ROOM`` bytes."""

    def chunks(self, chunk_size: int | None = None) -> Iterator[bytes]:
        data = self.read()
        yield data[:ROOM]
        raise OSError(errno.ENOSPC, "No space left on device")


class FillingStorage(FileSystemStorage):
    """The real file-system storage, on a disk with ``ROOM`` bytes left."""

    def _save(self, name: str, content: File[Any]) -> str:
        content.seek(0)
        return str(super()._save(name, FillingContent(content.read())))


def storages(backend: str, root: str) -> Any:
    return override_settings(
        STORAGES={
            "default": {"BACKEND": backend, "OPTIONS": {"location": root}},
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
    )


FULL = f"{__name__}.FillingStorage"
ROOMY = "django.core.files.storage.FileSystemStorage"


class DiskFullTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="suggest")

    def setUp(self) -> None:
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root, True)
        self.token = api_token_issue(actor=self.alice, name="cli")[1]

    def stored_files(self) -> list[str]:
        return sorted(str(path.relative_to(self.root)) for path in Path(self.root).rglob("*") if path.is_file())

    def assert_nothing_stored(self) -> None:
        assert not Source.objects.filter(key__startswith="uploads/").exists()
        assert not Document.objects.exists()
        assert not Extraction.objects.exists()
        assert not AuditEvent.objects.filter(action="ingest.upload").exists()
        assert self.stored_files() == []  # no half-written original

    def test_the_rest_endpoints_answer_507_naming_the_full_storage(self) -> None:
        with storages(FULL, self.root), self.captureOnCommitCallbacks(execute=True) as sent:
            legacy = self.client.post("/api/sources", {"file": SimpleUploadedFile("minutes.md", DATA)},
                                      HTTP_AUTHORIZATION=f"Bearer {self.token}")  # fmt: skip
            v1 = Client(HTTP_AUTHORIZATION=f"Bearer {self.token}").post(
                "/api/v1/uploads", data={"file": SimpleUploadedFile("minutes.md", DATA)}
            )
        for response in (legacy, v1):
            assert response.status_code == 507, response.content
            error = response.json()["error"]
            assert error["code"] == "storage_full"
            assert "storage is full" in error["message"]
            assert "nothing was stored" in error["message"]
        assert sent == []  # no extraction was queued
        self.assert_nothing_stored()

    def test_the_upload_page_says_the_storage_is_full(self) -> None:
        self.client.force_login(self.alice.user)
        with storages(FULL, self.root):
            response = self.client.post("/sources/upload", {"file": SimpleUploadedFile("minutes.md", DATA)})
        assert response.status_code == 507
        page = response.content.decode()
        assert "The document storage is full: nothing was stored." in page
        assert 'role="alert"' in page
        self.assert_nothing_stored()

    def test_once_there_is_room_again_the_same_upload_is_stored_whole(self) -> None:
        with storages(FULL, self.root):
            assert self.client.post("/api/sources", {"file": SimpleUploadedFile("minutes.md", DATA)},
                                    HTTP_AUTHORIZATION=f"Bearer {self.token}").status_code == 507  # fmt: skip
        with storages(ROOMY, self.root):
            extraction = document_ingest(actor=self.alice, filename="minutes.md", data=DATA, enqueue=False)
            assert extraction_run(extraction.pk) == "done"
        stored = Path(self.root, "originals", hashlib.sha256(DATA).hexdigest())
        assert stored.read_bytes() == DATA
        assert self.stored_files() == [str(stored.relative_to(self.root))]
        extraction.refresh_from_db()
        assert "approved the new pricing" in extraction.document.source.text

    def test_a_partial_original_left_by_a_crash_is_replaced_not_trusted(self) -> None:
        # A process killed mid-write (before this fix, or on a disk without atomic writes)
        # left a truncated original under the content's name.
        partial = Path(self.root, "originals", hashlib.sha256(DATA).hexdigest())
        partial.parent.mkdir(parents=True)
        partial.write_bytes(DATA[:ROOM])
        with storages(ROOMY, self.root):
            extraction = document_ingest(actor=self.alice, filename="minutes.md", data=DATA, enqueue=False)
            assert extraction_run(extraction.pk) == "done"
        assert partial.read_bytes() == DATA
        assert os.listdir(partial.parent) == [partial.name]
