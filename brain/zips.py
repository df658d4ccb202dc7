"""How big an uploaded zip's central directory is, read from its end record before it is parsed.

``zipfile.ZipFile`` parses the whole central directory when it opens an archive, building an
object for every entry, whatever the caller then wants of it: one local file named by a
million directory entries (a 47 MB upload) cost 8 s and ~430 MB before any limit of ours
could count them. ``directory_problem`` reads only the end record (and, for a zip64 archive,
its locator and zip64 end record): the entries it declares and the directory's size in
bytes. zipfile reads the directory by its size, not by the declared count, so both are
bounded: a lying count cannot hide a directory of a million entries.
"""

from __future__ import annotations

import io
import re
import stat
import struct
import zipfile
from typing import IO

FINDER_FOLDER = "__MACOSX/"
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def entry_path_problem(path: str, *, max_length: int) -> str | None:
    """Why an entry's name (a folder's without its ``/``) is not a safe relative POSIX path,
    or None. Rejected, never repaired: nothing is unpacked to disk, but a name that would
    climb out of its folder or be read differently elsewhere is no name to import by."""
    if not path:
        return "an empty path"
    if "\x00" in path:
        return "unsafe path (a NUL character)"
    if "\\" in path:
        return "unsafe path (a backslash; paths use /)"
    if _CONTROL.search(path):
        return "unsafe path (a control character)"
    if path.startswith("/") or _DRIVE.match(path):
        return "unsafe path (absolute)"
    segments = path.split("/")
    if ".." in segments:
        return "unsafe path (a '..' segment)"
    if any(segment in ("", ".") for segment in segments):
        return "unsafe path (an empty or '.' segment)"
    if len(path) > max_length:
        return f"path longer than {max_length:,} characters"
    return None


UTF8_NAMES = 0x800  # the general-purpose flag bit that says an entry's name is UTF-8


def entry_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as its writer meant it. Without the UTF-8 flag zipfile reads the bytes
    as cp437, but Info-ZIP's ``zip`` and most tools on Linux and macOS write UTF-8 without
    setting it: "Ünïcode Nöte.md" came out "├£n├»code N├╢te.md", and its [[links]] broke. A name
    whose bytes are valid UTF-8 is read so (cp437 text of accented letters rarely is)."""
    name = info.orig_filename
    if info.flag_bits & UTF8_NAMES or name.isascii():
        return name
    try:
        return name.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return name


def symbolic_link(info: zipfile.ZipInfo) -> bool:
    """Whether the entry is a symbolic link (Unix zips keep the mode in the external attributes):
    its content is a target path, not a file's text, and an import reads files only — as the
    folder readers skip or refuse links."""
    return stat.S_ISLNK(info.external_attr >> 16)


def finder_metadata(name: str) -> bool:
    """Whether a zip entry is macOS Finder's: "Compress" adds ``__MACOSX/…/._name``, a binary
    resource fork, beside every file it zips — never a page or a note."""
    return name.startswith(FINDER_FOLDER)


_END = b"PK\x05\x06"
_END_SIZE = 22
_END_FORMAT = "<4s4H2LH"  # signature, disk, directory disk, entries here, entries, size, offset, comment length
_LOCATOR = b"PK\x06\x07"
_LOCATOR_SIZE = 20
_LOCATOR_FORMAT = "<4sLQL"  # signature, disk, zip64 end record offset, disks
_END64 = b"PK\x06\x06"
_END64_SIZE = 56
# signature, record size, made by, needed, disk, directory disk, entries here, entries, size, offset
_END64_FORMAT = "<4sQ2H2L4Q"
_MAX_COMMENT = 0xFFFF

# A directory entry is 46 bytes and its name; names, extra fields and comments of real
# archives average well under this many bytes an entry.
BYTES_PER_ENTRY = 512


def declared_directory(data: bytes | IO[bytes]) -> tuple[int, int] | None:
    """(entries, directory bytes) the archive's end record declares, or None when it has none
    (then it is no zip, and opening it fails as such). The stream's position is restored."""
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    start = stream.tell()
    try:
        stream.seek(0, io.SEEK_END)
        size = stream.tell()
        tail_size = min(size, _END_SIZE + _MAX_COMMENT)
        stream.seek(size - tail_size)
        tail = stream.read(tail_size)
        at = tail.rfind(_END)
        if at < 0 or len(tail) - at < _END_SIZE:
            return None
        fields = struct.unpack(_END_FORMAT, tail[at : at + _END_SIZE])
        entries, directory = int(fields[4]), int(fields[5])
        if entries == 0xFFFF or directory == 0xFFFFFFFF:
            zip64 = _zip64_directory(stream, size - tail_size + at)
            if zip64 is not None:
                entries, directory = zip64
        return entries, directory
    except (OSError, struct.error):
        return None
    finally:
        stream.seek(start)


def _zip64_directory(stream: IO[bytes], end_offset: int) -> tuple[int, int] | None:
    if end_offset < _LOCATOR_SIZE:
        return None
    stream.seek(end_offset - _LOCATOR_SIZE)
    locator = stream.read(_LOCATOR_SIZE)
    if len(locator) != _LOCATOR_SIZE or not locator.startswith(_LOCATOR):
        return None
    offset = int(struct.unpack(_LOCATOR_FORMAT, locator)[2])
    stream.seek(offset)
    record = stream.read(_END64_SIZE)
    if len(record) != _END64_SIZE or not record.startswith(_END64):
        return None
    fields = struct.unpack(_END64_FORMAT, record)
    return int(fields[7]), int(fields[8])


def directory_problem(data: bytes | IO[bytes], *, max_entries: int, what: str = "the archive") -> str | None:
    """Why ``data``'s central directory is too large to parse (more than ``max_entries``
    entries declared, or more bytes than that many entries take), or None — also when it has
    no end record at all (opening it then fails as "not a zip")."""
    declared = declared_directory(data)
    if declared is None:
        return None
    entries, directory = declared
    if entries > max_entries:
        return f"{what} has {entries:,} entries; at most {max_entries:,} are read"
    if directory > max_entries * BYTES_PER_ENTRY:
        return f"{what}'s list of entries is {directory:,} bytes; at most {max_entries * BYTES_PER_ENTRY:,} are read"
    return None
