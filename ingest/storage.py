"""Writing an uploaded original to the media storage: a complete copy, or none at all.

Originals are stored once per content hash (``originals/<sha256>``), so a copy that a
full disk or a crash cut short would be trusted by every later upload of the same bytes
— and its extraction would read garbage. ``original_store`` therefore never leaves a
partial copy behind: a write that fails is removed, and an existing copy of the wrong size
(from a process killed mid-write) is replaced. A storage with no room left raises
``StorageFull``, which every transport turns into 507 "the document storage is full";
the caller's transaction then rolls back, so no capture row points at a missing file.
"""

from __future__ import annotations

import contextlib
import errno
import logging

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from brain.domain import DomainError

logger = logging.getLogger(__name__)

# "No space left on device", "Disk quota exceeded", "File too large" (a per-file limit).
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class StorageFull(DomainError):
    """The media storage has no room for the upload; nothing was stored."""

    code = "storage_full"
    status = 507  # Insufficient Storage (RFC 4918)

    @property
    def safe_message(self) -> str:
        return "The document storage is full: nothing was stored. Try again once an administrator has freed space."


def original_store(name: str, data: bytes) -> None:
    """Make ``name`` in the default storage hold exactly ``data``.

    A complete copy already there is kept (the same bytes, stored once). Raises
    ``StorageFull`` when the storage has no room, any other ``OSError`` as it is; in both
    cases no partial copy is left under ``name``.
    """
    if default_storage.exists(name):
        if default_storage.size(name) == len(data):
            return
        logger.warning("replacing an incomplete stored original (%s)", name.rsplit("/", 1)[-1][:12])
        default_storage.delete(name)
    try:
        stored = default_storage.save(name, ContentFile(data))
    except OSError as exc:
        _remove_partial(name, len(data))
        if exc.errno in NO_ROOM:
            logger.error("the media storage is full: an upload of %d bytes was refused", len(data))
            raise StorageFull("the media storage is full") from None
        raise
    if stored != name:
        # Another upload of the same bytes wrote ``name`` meanwhile and ours landed beside it:
        # the two are identical, keep one.
        default_storage.delete(stored)


def _remove_partial(name: str, size: int) -> None:
    """Delete what a failed write left under ``name`` (never a complete copy of ``size`` bytes)."""
    with contextlib.suppress(OSError):
        if default_storage.exists(name) and default_storage.size(name) != size:
            default_storage.delete(name)
