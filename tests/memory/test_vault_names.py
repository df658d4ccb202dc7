"""A vault's note names are one however encoded: read from its folder or from a zip, one note."""

from __future__ import annotations

import io
import unicodedata
import zipfile
from pathlib import Path

import pytest

from grants.principals import SYSTEM
from grants.services import member_create
from memory.vaults import obsidian_import, vault_files_from_folder
from memory.vaults.obsidian import vault_files_from_zip

pytestmark = pytest.mark.django_db


def test_the_same_decomposed_vault_by_folder_then_zip_is_unchanged(tmp_path: Path) -> None:
    """The zip reader keys notes by NFC; the folder reader (brain_memory_vault; macOS hands
    back NFD names) kept the name as stored: one vault, two sets of origins."""
    alice = member_create(actor=SYSTEM, username="alice")
    name = unicodedata.normalize("NFD", "Réunion.md")
    (tmp_path / name).write_bytes(b"We ship on Thursdays.")
    first = obsidian_import(actor=alice, files=vault_files_from_folder(tmp_path), vault="V")
    assert first.outcomes == {"stored": 1}, first.outcomes
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, b"We ship on Thursdays.")
    files, _ = vault_files_from_zip(buffer.getvalue())
    again = obsidian_import(actor=alice, files=files, vault="V")
    assert again.outcomes == {"unchanged": 1}, again.outcomes
