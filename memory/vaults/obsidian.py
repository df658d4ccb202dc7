"""Obsidian vault → memories: one memory per note, ``[[wiki links]]`` → memory links.

A note ``<path>.md`` becomes the memory with origin ``obsidian:<vault>/<path>`` (source
``obsidian``), so importing the same vault again updates changed notes and leaves the rest
``unchanged``. Its content is a title line (``# <front matter title or file name>``, unless
the body already opens with a ``# `` heading) and the body. Front matter (YAML) maps:

- ``tags`` / ``tag`` (a list, or one string split at commas and spaces; a leading ``#`` is
  dropped) → tags; inline ``#tags`` in the body are added by the capture service itself;
- ``status`` ``canonical | draft | deprecated`` → the memory's status (other values ignored);
- ``kind`` ``episodic | semantic`` → kind, at first import;
- ``occurred`` (else ``date``) → when the memory happened;
- ``title`` → the title line; ``aliases`` → extra names ``[[links]]`` resolve by;
- ``brain_id`` → the memory an exported note came from (``memory.vaults.export``): when it is
  one the importer wrote, that memory is updated in place instead of a new one captured; any
  note carrying one is taken as Brain's export — its text gets no title line, and its
  ``layer`` (``personal | company``) is where it lands unless the import names a layer.

Other keys (``importance`` included: no service sets it from outside) are ignored and counted
in the report. Links resolve as Obsidian resolves them: a path, else the file name without
``.md`` (case-insensitive; the shortest path wins when names repeat), else an alias.
``|alias``, ``#heading`` and ``^block`` parts are dropped; embeds of attachments are not
links. Files under a hidden folder (``.obsidian/``, ``.trash/``, ``.git/``…) are left out;
other non-note files are counted, never read. Symbolic links in a folder are not followed.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import unicodedata
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.core.exceptions import PermissionDenied

from brain.zips import finder_metadata
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.models import Kind, LinkType, Status, Workspace
from memory.occurred import occurred_or_none
from memory.services import workspace_value
from memory.vaults import frontmatter
from memory.vaults.archive import ZipLimits, read_zip
from memory.vaults.common import (
    MAX_NOTES,
    Charge,
    ImportRefused,
    ImportReport,
    PlannedNote,
    Progress,
    Skipped,
    check_plan,
    path_problem,
    shown_path,
    store_plan,
    too_long,
)

SOURCE = "obsidian"
MAX_VAULT_BYTES = 50 * 1024 * 1024
TOO_BIG = f"the vault holds more than {MAX_NOTES:,} notes or {MAX_VAULT_BYTES:,} bytes of notes; import it in parts"
VAULT_ZIP = ZipLimits(max_entries=50_000, max_bytes=MAX_VAULT_BYTES, max_entry_bytes=MAX_VAULT_BYTES)
# The export writes a memory's links under this marker; an import reads them back (typed)
# and leaves the block out of the content, so an exported vault re-imports unchanged.
LINKS_HEADING = "## Links"
LINKS_MARKER = "<!-- brain:links -->"
# Keys the export writes for people to read; the import neither maps nor reports them
# (``layer`` is read from a note carrying a ``brain_id``).
EXPORT_ONLY_KEYS = frozenset({"layer", "created", "source", "origin"})
MAPPED_KEYS = frozenset({"tags", "tag", "status", "kind", "occurred", "date", "title", "aliases", "alias", "brain_id"})

VAULT_NAME = re.compile(r"^[\w][\w .-]{0,63}$")
_WIKI_LINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_EXPORT_LINK = re.compile(r"^- ([a-z_]+) \[\[([^\[\]\n]+?)\]\]\s*$")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_TAG_SPLIT = re.compile(r"[,\s]+")
# Files a ``![[embed]]`` names that are attachments, not notes: not counted as missing.
_ATTACHMENT = re.compile(
    r"\.(png|jpe?g|gif|svg|webp|bmp|avif|pdf|mp3|mp4|m4a|wav|ogg|flac|webm|mov|mkv|canvas|excalidraw|base|csv|"
    r"docx?|xlsx?|pptx?|zip|txt|json)$",
    re.IGNORECASE,
)


def hidden(path: str) -> bool:
    """A file Obsidian does not treat as vault content: under a dot folder (or macOS zip debris)."""
    return any(segment.startswith(".") or segment == "__MACOSX" for segment in path.split("/"))


def is_note(path: str) -> bool:
    return path.lower().endswith(".md") and not hidden(path)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1][:-3]


# --------------------------------------------------------------------------- reading a vault


def vault_files_from_zip(data: bytes | IO[bytes]) -> tuple[dict[str, bytes], str | None]:
    """A zipped vault as ``{vault-relative path: bytes}`` and the folder it was zipped in, if any.

    Notes are inflated (bounded: ``memory.vaults.archive``); other files map to ``b""`` and are
    never inflated. A zip whose every entry sits in one top folder (a vault zipped as its
    folder, without ``.obsidian/`` at the root) has that folder removed from the paths, so the
    origins match an import of the folder itself; its name is returned as the vault's name —
    except a layer folder of Brain's own export (``personal/``, ``company/``): its links name
    that folder (``[[personal/…]]``), and cutting it left every one of them unresolved.
    """
    contents = read_zip(data, wanted=is_note, limits=VAULT_ZIP, what="the vault zip")
    files = {**{name: b"" for name in contents.others}, **contents.files}
    visible = [name for name in files if not finder_metadata(name)]
    tops = {name.split("/", 1)[0] for name in visible}
    if len(tops) == 1 and all("/" in name for name in visible):
        (top,) = tops
        if not top.startswith(".") and top not in Workspace.values:
            cut = len(top) + 1
            return {name[cut:]: data for name, data in files.items() if name.startswith(top + "/")}, top
    return files, None


def vault_files_from_folder(folder: Path) -> dict[str, bytes]:
    """A vault folder as ``{vault-relative POSIX path: bytes}``; hidden folders are not entered.

    Notes are read (refused past 5,000 notes or 50 MB before reading more); other files map to
    ``b""`` unread. Symbolic links are not followed (a link could reach outside the vault).
    """
    files: dict[str, bytes] = {}
    total = notes = 0
    for directory, subdirectories, names in os.walk(folder, followlinks=False):
        subdirectories[:] = sorted(name for name in subdirectories if not name.startswith("."))
        for name in sorted(names):
            full = Path(directory) / name
            # Composed (NFC), as the zip reader keys them: macOS hands back decomposed names,
            # and one vault read from its folder and from a zip must be the same notes.
            relative = unicodedata.normalize("NFC", full.relative_to(folder).as_posix())
            if hidden(relative) or full.is_symlink() or not full.is_file():
                continue
            if not is_note(relative):
                files[relative] = b""
                continue
            notes += 1
            total += full.stat().st_size
            if notes > MAX_NOTES or total > MAX_VAULT_BYTES:
                raise ImportRefused([TOO_BIG])
            files[relative] = full.read_bytes()
    return files


# --------------------------------------------------------------------------- one note


@dataclass
class Note:
    """What one note says, before links are resolved."""

    path: str
    title: str
    body: str
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    status: str | None = None
    kind: str | None = None
    occurred_at: dt.datetime | None = None
    brain_id: uuid.UUID | None = None
    layer: str | None = None  # the export's ``layer``
    wiki_targets: list[str] = field(default_factory=list)
    typed_targets: list[tuple[str, str]] = field(default_factory=list)  # from an export's links block
    ignored: list[str] = field(default_factory=list)

    def content(self, *, exported: bool) -> str:
        """The memory's text: an exported memory's text as it was; else a title line and the body."""
        body = self.body.strip()
        if exported or body.startswith("# "):
            return body
        return f"# {self.title}\n\n{body}" if body else f"# {self.title}"


def read_note(path: str, raw: bytes) -> Note:
    """Parse one note; ``MemoryInvalid`` says why it cannot be read."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MemoryInvalid("not UTF-8 text") from None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    yaml_text, body = frontmatter.split(text)
    try:
        meta = frontmatter.load(yaml_text) if yaml_text is not None else {}
    except frontmatter.FrontMatterInvalid as invalid:
        raise MemoryInvalid(str(invalid)) from None
    body, typed = _split_export_links(body)
    note = Note(path=path, title=_stem(path), body=body, typed_targets=typed)
    _apply_front_matter(note, meta)
    note.wiki_targets = wiki_targets(body)
    return note


def _split_export_links(body: str) -> tuple[str, list[tuple[str, str]]]:
    """The body without the export's links block, and that block's (target, type) pairs.

    The block is the last ``## Links`` heading under the marker, at the start of a line, with
    nothing after it but link lines: a memory's own text that merely holds the marker (with
    more text after it) stays text, and the export writes its block after such a text.
    """
    at = body.rfind(f"{LINKS_HEADING}\n{LINKS_MARKER}")
    if at < 0 or (at > 0 and body[at - 1] != "\n"):
        return body, []
    typed: list[tuple[str, str]] = []
    for line in body[at:].split("\n")[2:]:
        if not line.strip():
            continue
        match = _EXPORT_LINK.match(line.strip())
        if match is None:
            return body, []
        kind = match.group(1) if match.group(1) in LinkType.values else LinkType.RELATES_TO
        typed.append((_link_name(match.group(2)), kind))
    return body[:at], typed


def _apply_front_matter(note: Note, meta: dict[str, Any]) -> None:
    for key, value in meta.items():
        if key in ("tags", "tag"):
            if not _add_tags(note, value):
                note.ignored.append(key)
        elif key == "status" and isinstance(value, str) and value.strip().lower() in Status.values:
            note.status = value.strip().lower()
        elif key == "kind" and isinstance(value, str) and value.strip().lower() in Kind.values:
            note.kind = value.strip().lower()
        elif key in ("occurred", "date") and _when(value) is not None:
            if key == "occurred" or "occurred" not in meta:
                note.occurred_at = _when(value)
        elif key == "title" and isinstance(value, str | int | float) and str(value).strip():
            note.title = str(value).strip()
        elif key in ("aliases", "alias") and isinstance(value, list | str):
            note.aliases.extend(str(item).strip() for item in (value if isinstance(value, list) else [value]))
        elif key == "brain_id" and _uuid(value) is not None:
            note.brain_id = _uuid(value)
        elif key == "layer" and value in Workspace.values:
            note.layer = str(value)
        elif key not in EXPORT_ONLY_KEYS:
            note.ignored.append(key)


def _add_tags(note: Note, value: Any) -> bool:
    if isinstance(value, str):
        items: list[Any] = _TAG_SPLIT.split(value)
    elif isinstance(value, list):
        items = value
    else:
        return value is None
    for item in items:
        if isinstance(item, str | int | float) and not isinstance(item, bool):
            tag = str(item).strip().lstrip("#").strip()
            if tag:
                note.tags.append(tag)
    return True


def _when(value: Any) -> dt.datetime | None:
    # A date no memory may carry (year 9999 at -14:00 is year 10000 in UTC) is no date, like
    # one that does not parse.
    if isinstance(value, dt.datetime):
        return occurred_or_none(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    if isinstance(value, dt.date):
        return occurred_or_none(dt.datetime.combine(value, dt.time(), tzinfo=dt.UTC))
    if isinstance(value, str):
        try:
            return _when(dt.datetime.fromisoformat(value.strip()))
        except ValueError:
            return None
    return None


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def without_fenced_code(body: str) -> str:
    """``body`` without its fenced code blocks (a fence left open runs to the end), in one pass.

    Line by line, not a regex: the lazy "opening fence … closing fence" pattern re-scanned the
    rest of the note from every unclosed opener — ``"```a\\n" * 32000`` (371 bytes zipped) took
    21 s, and it ran before a note was skipped as too long.
    """
    kept: list[str] = []
    fence = ""
    for line in body.split("\n"):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and not stripped[len(fence) :].strip(fence[0] + " \t"):
                fence = ""  # a closing fence: the same character, at least as long, nothing after
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence = opening.group(1)
            continue
        kept.append(line)
    return "\n".join(kept)


def wiki_targets(body: str) -> list[str]:
    """The note names ``[[links]]`` in ``body`` point at (outside code), without alias/heading parts."""
    text = _INLINE_CODE.sub("", without_fenced_code(body))
    targets: list[str] = []
    for embed, inner in _WIKI_LINK.findall(text):
        name = _link_name(inner)
        if not name or (embed and _ATTACHMENT.search(name)):
            continue  # a link to a heading of the same note, or an embedded attachment
        targets.append(name)
    return targets


def _link_name(inner: str) -> str:
    target = inner.split("|", 1)[0].rstrip("\\")  # "\|" is a pipe escaped inside a table
    return re.split(r"[#^]", target, maxsplit=1)[0].strip()


# --------------------------------------------------------------------------- resolving links


class Resolver:
    """Obsidian's link resolution over the notes of one vault."""

    def __init__(self, notes: list[Note]) -> None:
        self.by_path: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = {}
        self.by_alias: dict[str, list[str]] = {}
        # The tails of paths after one of their "/" ("b/c" and "c" of "a/b/c") that some link
        # names: such a link is one lookup. Scanning every path for each link was quadratic — a
        # 62 KB vault of 400 notes, 2,400 links each, held a web thread for 90 s — and keeping
        # every tail of every path held 332 MB for 1,000 notes of 1,000-character paths.
        wanted = {
            target
            for note in notes
            for name in [*note.wiki_targets, *(name for name, _ in note.typed_targets)]
            if "/" in (target := _wanted(name))
        }
        self.by_tail: dict[str, list[str]] = {}
        self.resolved: dict[str, str | None] = {}
        for note in notes:
            lowered = note.path[:-3].lower()
            self.by_path[lowered] = note.path
            self.by_name.setdefault(lowered.rsplit("/", 1)[-1], []).append(note.path)
            for slash in (index for index, char in enumerate(lowered) if char == "/"):
                if lowered[slash + 1 :] in wanted:
                    self.by_tail.setdefault(lowered[slash + 1 :], []).append(note.path)
            for alias in note.aliases:
                self.by_alias.setdefault(alias.lower(), []).append(note.path)

    def resolve(self, name: str) -> str | None:
        """The path of the note ``name`` links to, or None (each name resolved once)."""
        if name not in self.resolved:
            self.resolved[name] = self._resolve(name)
        return self.resolved[name]

    def _resolve(self, name: str) -> str | None:
        lowered = _wanted(name)
        if "/" in lowered:
            if lowered in self.by_path:
                return self.by_path[lowered]
            return _shortest(self.by_tail.get(lowered, []))
        return _shortest(self.by_name.get(lowered, [])) or _shortest(self.by_alias.get(lowered, []))


def _wanted(name: str) -> str:
    """A link's target as the index keys it: lower case, no leading "/", no ".md"."""
    wanted = name.strip().removeprefix("/")
    if wanted.lower().endswith(".md"):
        wanted = wanted[:-3]
    return wanted.lower()


def _shortest(paths: list[str]) -> str | None:
    return min(paths, key=lambda path: (len(path), path)) if paths else None


# --------------------------------------------------------------------------- the import


def obsidian_import(
    *,
    actor: Member,
    files: Mapping[str, bytes],
    vault: str,
    workspace: str | None = None,
    charge: Charge | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a vault given as ``{vault-relative POSIX path: bytes}``; all or nothing.

    Every path is checked (absolute, ``..``, NUL, backslash: the import is refused), then every
    note is read and checked (UTF-8, front matter, the secret detector, tags, the origin's
    length); any problem refuses the whole import (``ImportRefused`` lists them all) before a
    memory is written. A note over the content limit (20,000 characters) is skipped and
    reported. Then every note is stored (``memory_capture_from``) and the links are drawn, in
    one transaction. At most 5,000 notes and 50 MB of notes. ``charge``, ``progress``: see ``store_plan``.
    """
    if not isinstance(actor, Member) or not actor.is_active:
        raise PermissionDenied("only an active member has memories")
    if not isinstance(vault, str) or not VAULT_NAME.match(vault):
        raise MemoryInvalid(
            'vault must be 1 to 64 letters, digits, spaces, "-", "_" or "." (it names the vault in every origin)'
        )
    workspace_value(workspace)
    report = ImportReport(source=SOURCE)
    problems = [f"{shown_path(path)}: {problem}" for path in files if (problem := path_problem(path)) is not None]
    if problems:
        raise ImportRefused(problems)
    paths = sorted(path for path in files if is_note(path))
    report.other_files = sum(1 for path in files if not hidden(path) and not is_note(path))
    if len(paths) > MAX_NOTES or sum(len(files[path]) for path in paths) > MAX_VAULT_BYTES:
        raise ImportRefused([TOO_BIG])
    notes: list[Note] = []
    for path in paths:
        try:
            notes.append(read_note(path, files[path]))
        except MemoryInvalid as invalid:
            problems.append(f"{path}: {invalid}")
    planned = _plan(vault, notes, report)
    check_plan(planned, problems)
    return store_plan(
        actor=actor, notes=planned, source=SOURCE, workspace=workspace, report=report, charge=charge, progress=progress
    )


def _plan(vault: str, notes: list[Note], report: ImportReport) -> list[PlannedNote]:
    """Each note as the capture it will be, links resolved; too-long notes skipped."""
    resolver = Resolver(notes)
    planned: list[PlannedNote] = []
    for note in notes:
        report.ignored_fields.update(note.ignored)
        # A note carrying a brain_id is Brain's export: its text is the memory's as it was
        # (no title line added) and its layer is kept, whoever imports it.
        exported = note.brain_id is not None
        content = note.content(exported=exported)
        reason = too_long(content)
        if reason is not None:
            report.skipped.append(Skipped(note.path, reason))
            continue
        links: list[tuple[str, str]] = []
        for name, kind in [*((name, LinkType.RELATES_TO.value) for name in note.wiki_targets), *note.typed_targets]:
            target = resolver.resolve(name)
            if target is None:
                report.links_missing += 1
            elif target != note.path:
                links.append((target, kind))
        planned.append(
            PlannedNote(
                key=note.path, label=note.path, origin=f"obsidian:{vault}/{note.path}", content=content,
                tags=note.tags, status=note.status, kind=note.kind, occurred_at=note.occurred_at,
                brain_id=note.brain_id, links=links, workspace=note.layer if exported else None,
            )
        )  # fmt: skip
    return planned
