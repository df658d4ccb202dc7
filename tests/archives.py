"""Zip archives for tests: made from a name → content mapping, read back into one."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping


def zip_of(files: Mapping[str, str | bytes]) -> bytes:
    """A deflated zip holding ``files`` (text is written as UTF-8), in the mapping's order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def unzip(data: bytes) -> dict[str, bytes]:
    """Every file of the zip ``data``, by name."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}
