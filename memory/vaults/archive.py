"""Reading an uploaded zip without trusting it.

Every entry's name is checked as a relative POSIX path (rejected, not repaired: absolute
paths, ``..``, NUL, backslashes, control characters); the entry count is capped; the
entries an importer wants are capped one by one and in total by their declared sizes, a
declared compression ratio over ``max_ratio`` is refused as a bomb, and each entry is
inflated with a bounded read, so a lying header cannot make us inflate more than its
declared size (a mismatch refuses the archive). Entries the importer does not want are
listed, never inflated. Every problem found is named at once (``ImportRefused``).
"""

from __future__ import annotations

import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from brain.zips import directory_problem, entry_name, symbolic_link
from memory.vaults.common import ImportRefused, path_problem, shown_path

CHUNK = 1024 * 1024
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, ValueError, RuntimeError)


@dataclass(frozen=True)
class ZipLimits:
    """How much of a zip an import will read.

    ``max_bytes`` bounds the wanted entries' inflated total (shared across the parts of a
    multi-part export through one ``Budget``); ``max_ratio`` applies to entries over
    ``ratio_floor`` (a short text legitimately compresses far better than a large one).
    """

    max_entries: int
    max_bytes: int
    max_entry_bytes: int
    max_ratio: int = 100
    ratio_floor: int = 1024 * 1024


@dataclass
class Budget:
    """Bytes an import may still inflate."""

    remaining: int


@dataclass
class ZipContents:
    files: dict[str, bytes] = field(default_factory=dict)  # the wanted entries, inflated
    others: list[str] = field(default_factory=list)  # every other file entry, never inflated


def open_zip(data: bytes | IO[bytes], *, what: str = "the upload", max_entries: int = 50_000) -> zipfile.ZipFile:
    """``data`` as a zip, or ``ImportRefused`` saying it is not one, or that its directory
    declares more than ``max_entries`` entries (read from its end record before zipfile
    parses the directory into an object per entry)."""
    import io

    stream = io.BytesIO(data) if isinstance(data, bytes) else data
    problem = directory_problem(stream, max_entries=max_entries, what=what)
    if problem is not None:
        raise ImportRefused([problem])
    try:
        return zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise ImportRefused([f"{what} is not a valid zip archive"]) from None


def read_zip(
    data: bytes | IO[bytes],
    *,
    wanted: Callable[[str], bool],
    limits: ZipLimits,
    budget: Budget | None = None,
    what: str = "the upload",
) -> ZipContents:
    """The wanted entries of ``data`` inflated (by name) and the names of the others.

    Raises ``ImportRefused`` naming every unsafe name, encrypted or oversized entry and
    suspicious ratio before anything is inflated, and a damaged entry while inflating.
    """
    budget = budget if budget is not None else Budget(limits.max_bytes)
    with open_zip(data, what=what, max_entries=limits.max_entries) as archive:
        chosen = select_entries(archive, wanted=wanted, limits=limits, budget=budget, what=what)
        contents = ZipContents(others=chosen.others)
        for info in chosen.infos:
            # By its composed (NFC) name: macOS zips "Réunion.md" decomposed, and the same vault
            # zipped there and elsewhere must be the same notes (its origins, its [[links]]).
            contents.files[unicodedata.normalize("NFC", entry_name(info))] = inflate(archive, info)
        return contents


@dataclass
class Selection:
    infos: list[zipfile.ZipInfo] = field(default_factory=list)
    others: list[str] = field(default_factory=list)


def select_entries(
    archive: zipfile.ZipFile, *, wanted: Callable[[str], bool], limits: ZipLimits, budget: Budget, what: str
) -> Selection:
    """Check every entry's name and the wanted entries' sizes; charge them to ``budget``."""
    infos = archive.infolist()
    if len(infos) > limits.max_entries:
        raise ImportRefused([f"{what} has {len(infos):,} entries; an import reads at most {limits.max_entries:,}"])
    problems: list[str] = []
    selection = Selection()
    seen: set[str] = set()
    declared = 0
    for info in infos:
        # ``orig_filename`` is the name as stored (``filename`` is cut at a NUL), read as UTF-8
        # where its writer wrote UTF-8 without saying so (``entry_name``).
        name = entry_name(info)
        directory = name.endswith("/")
        problem = path_problem(name[:-1] if directory else name)
        if problem is not None:
            problems.append(f"{shown_path(name)}: {problem}")
            continue
        if directory:
            continue
        if symbolic_link(info):
            problems.append(f"{shown_path(name)}: a symbolic link (an import reads files only)")
            continue
        # One name, however it is encoded or capitalised: "Plan.md" and "plan.md" are one file
        # on macOS and Windows, and which of the two a note's [[link]] means is anyone's guess.
        same = unicodedata.normalize("NFC", name).casefold()
        if same in seen:
            problems.append(f"{shown_path(name)}: the archive holds it twice (names differing in case are one)")
            continue
        seen.add(same)
        if not wanted(name):
            selection.others.append(name)
            continue
        problem = size_problem(info, limits)
        if problem is not None:
            problems.append(f"{name}: {problem}")
            continue
        declared += info.file_size
        selection.infos.append(info)
    if declared > budget.remaining:
        problems.append(f"{what} would expand to more than {limits.max_bytes:,} bytes of notes")
    if problems:
        raise ImportRefused(problems)
    budget.remaining -= declared
    return selection


def size_problem(info: zipfile.ZipInfo, limits: ZipLimits) -> str | None:
    """Why an entry is not inflated at all, or None."""
    if info.flag_bits & 0x1:
        return "encrypted"
    if info.file_size > limits.max_entry_bytes:
        return f"larger than {limits.max_entry_bytes:,} bytes"
    if info.file_size > limits.ratio_floor and info.file_size > limits.max_ratio * max(info.compress_size, 1):
        return f"compressed more than {limits.max_ratio}:1 (a zip bomb?)"
    return None


def inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """One entry's bytes, read no further than its declared size (checked exactly)."""
    try:
        with archive.open(info) as member:
            raw = member.read(info.file_size + 1)
    except _DAMAGED:
        raise ImportRefused([f"{info.orig_filename}: damaged (its size or checksum does not match)"]) from None
    if len(raw) != info.file_size:
        raise ImportRefused([f"{info.orig_filename}: does not expand to its declared size"])
    return raw


def inflate_to_file(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """One (large) entry into a temporary file — memory up to 8 MB, then disk — bounded like ``inflate``.

    The caller closes it.
    """
    sink: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=8 * CHUNK)  # noqa: SIM115 (returned open)
    written = 0
    try:
        with archive.open(info) as member:
            while written <= info.file_size:
                piece = member.read(min(CHUNK, info.file_size + 1 - written))
                if not piece:
                    break
                sink.write(piece)
                written += len(piece)
    except _DAMAGED:
        sink.close()
        raise ImportRefused([f"{info.orig_filename}: damaged (its size or checksum does not match)"]) from None
    if written != info.file_size:
        sink.close()
        raise ImportRefused([f"{info.orig_filename}: does not expand to its declared size"])
    sink.seek(0)
    return sink
