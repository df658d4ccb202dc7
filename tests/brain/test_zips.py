"""A zip's central directory is sized from its end record before zipfile parses it.

zipfile builds an object for every directory entry on opening, and reads the directory by
its size, not its declared count: a million entries naming one file cost 8 s and ~430 MB
before any limit could count them. Every surface that opens an upload checks it first.
"""

from __future__ import annotations

import io
import struct
import zipfile

import pytest
from django.test import override_settings

from brain.zips import BYTES_PER_ENTRY, declared_directory, directory_problem
from builds.driver import ArchiveRefused, files_from_zip
from ingest.converters import MAX_ZIP_ENTRIES, Unsupported, sniff
from memory.vaults.archive import open_zip
from memory.vaults.common import ImportRefused


def zip_of(count: int, name: str = "n{}.md") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for number in range(count):
            archive.writestr(name.format(number), "")
    return buffer.getvalue()


def lying(copies: int) -> bytes:
    """One file and ``copies`` directory entries naming it, under an end record that says 1."""
    honest = zip_of(1)
    end = honest.rindex(b"PK\x05\x06")
    fields = list(struct.unpack("<4s4H2LH", honest[end : end + 22]))
    offset, size = fields[6], fields[5]
    record = honest[offset : offset + size]
    fields[5] = size * copies  # the directory's size in bytes
    return honest[:offset] + record * copies + struct.pack("<4s4H2LH", *fields)


def test_the_end_record_declares_entries_and_directory_bytes_zip64_included() -> None:
    entries, directory = declared_directory(zip_of(3)) or (0, 0)
    assert entries == 3
    assert 3 * (46 + 5) <= directory <= 3 * (46 + 5) + 30  # each entry: 46 bytes and its name
    big = zip_of(70_000, "{}")  # past 65,535 entries: zipfile writes a zip64 end record
    assert declared_directory(big)[0] == 70_000  # type: ignore[index]
    assert declared_directory(b"not a zip at all") is None
    stream = io.BytesIO(zip_of(2))
    stream.seek(5)
    declared_directory(stream)
    assert stream.tell() == 5  # the caller's position is kept


def test_a_count_that_lies_is_caught_by_the_directorys_size() -> None:
    data = lying(20_000)
    assert declared_directory(data)[0] == 1  # type: ignore[index]
    with zipfile.ZipFile(io.BytesIO(data)) as opened:  # what zipfile would have parsed
        assert len(opened.infolist()) == 20_000
    problem = directory_problem(data, max_entries=1_000)
    assert problem is not None
    assert "list of entries" in problem
    assert directory_problem(zip_of(1_000), max_entries=1_000) is None
    assert len(zip_of(1_000)) < 1_000 * BYTES_PER_ENTRY


def test_every_surface_refuses_a_directory_past_its_limit_before_parsing_it() -> None:
    with pytest.raises(Unsupported, match=f"at most {MAX_ZIP_ENTRIES:,}"):
        sniff(zip_of(MAX_ZIP_ENTRIES + 1))
    with pytest.raises(ArchiveRefused, match="entries"):
        files_from_zip(lying(250_000))  # ~12 MB of directory declared as one entry
    with pytest.raises(ImportRefused, match="at most 10"):
        open_zip(zip_of(11), max_entries=10)
    with override_settings(BRAIN_BUILD_DRIVER={"MAX_ZIP_BYTES": 1024, "MAX_FILE_BYTES": 1024, "MAX_FILES": 10}):
        with pytest.raises(ArchiveRefused, match="larger than 1024 bytes"):
            files_from_zip(zip_of(40))
        assert len(files_from_zip(zip_of(3))) == 3
