"""A Notion "Markdown & CSV" export zip → memories.

The zip Notion gives is either the export itself or, for a large workspace, a zip of parts
(``Export-<uuid>-Part-1.zip``, …) each holding a piece of it; both are read. Inside, a page is
``<Title> <32 hex id>.md`` and its sub-pages sit in a folder named like it (``<Title> <id>/``);
a database is ``<Name> <id>.csv`` (and ``<Name> <id>_all.csv``, every row regardless of the
view: preferred when present) with its rows' pages in the folder ``<Name> <id>/``.

- Each page → one memory, origin ``notion:<page id>``, source ``notion``: the page's
  Markdown as exported (its ``# Title`` heading and Notion's ``Property: value`` lines kept;
  a title line from the file name is added when the page has no heading). A ``Tags:``
  property becomes tags.
- Notion's links between pages (``[text](Other%20Page%20<id>.md)``, relative, and
  ``notion.so/…-<id>`` URLs) → ``relates_to`` links between the imported pages.
- Each database row without a page of its own (matched by title) → one memory of
  ``Column: value`` lines, origin ``notion:<database id>:row:<hash of its title>``; at most
  2,000 rows a database.

Re-importing the same export changes nothing (origins are the page ids); a changed page is
updated. All or nothing, as ``memory.vaults.common`` describes; zip safety in
``memory.vaults.archive`` (unsafe names refused, entries ≤ 50,000, ≤ 100 MB of pages and
tables inflated, compression ratio ≤ 100:1 for large entries).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import IO
from urllib.parse import unquote

from django.core.exceptions import PermissionDenied

from brain.zips import finder_metadata
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.models import LinkType
from memory.services import workspace_value
from memory.vaults.archive import Budget, ZipLimits, inflate_to_file, open_zip, read_zip, select_entries
from memory.vaults.common import (
    MAX_NOTES,
    Charge,
    ImportRefused,
    ImportReport,
    PlannedNote,
    Progress,
    Skipped,
    check_plan,
    store_plan,
    too_long,
)

SOURCE = "notion"
MAX_TEXT_BYTES = 100 * 1024 * 1024
MAX_PART_BYTES = 1024 * 1024 * 1024
MAX_ROWS = 2_000
NOTION_ZIP = ZipLimits(max_entries=50_000, max_bytes=MAX_TEXT_BYTES, max_entry_bytes=MAX_TEXT_BYTES)
NOTION_PARTS = ZipLimits(max_entries=100, max_bytes=MAX_PART_BYTES, max_entry_bytes=MAX_PART_BYTES)

# The title ends at a non-space ("(?:.*?\S)?"): a lazy ".*?" and "\s*" both reading the
# spaces before the id split a run of them every way (a 1,000-character name: 26 ms a look).
_PAGE = re.compile(r"^(?P<title>(?:.*?\S)?)\s*(?P<id>[0-9a-f]{32})\.md$")
_TABLE = re.compile(r"^(?P<name>(?:.*?\S)?)\s*(?P<id>[0-9a-f]{32})(?P<all>_all)?\.csv$")
# Linear on any input: the heading's line is taken whole and stripped in code ("(.+?)\s*$" was
# quadratic on a heading of many spaces), and a link's text stops at any bracket ("[" * 80000
# took 9 s when it could run on to the end from every "[").
_HEADING = re.compile(r"^# +(\S.*)$", re.MULTILINE)
_PROPERTY = re.compile(r"^([^:\n]{1,80}): (.*)$")
_LINK = re.compile(r"\[[^\[\]\n]*\]\(([^)\s]+)\)")
_TARGET_ID = re.compile(r"([0-9a-f]{32})(?:\.md)?(?:[?#].*)?$")
_WORDS = re.compile(r"[^\w]+")


def _wanted(name: str) -> bool:
    return name.lower().endswith((".md", ".csv")) and not finder_metadata(name)


# --------------------------------------------------------------------------- reading the zip


def notion_files(zip_bytes: bytes | IO[bytes]) -> tuple[dict[str, bytes], int]:
    """The export's pages and tables (``{path: bytes}``) and how many other files it holds.

    A zip whose files are all zips is a multi-part export: each part is inflated to a
    temporary file (bounded like any entry) and read; the pages and tables of every part
    share one 100 MB budget.
    """
    with open_zip(zip_bytes, what="the Notion zip") as outer:
        entries = [i for i in outer.infolist() if not i.is_dir() and not finder_metadata(i.orig_filename)]
        if not entries or not all(info.orig_filename.lower().endswith(".zip") for info in entries):
            contents = read_zip(zip_bytes, wanted=_wanted, limits=NOTION_ZIP, what="the Notion zip")
            return contents.files, len(contents.others)
        parts = select_entries(
            outer, wanted=lambda name: name.lower().endswith(".zip"), limits=NOTION_PARTS,
            budget=Budget(MAX_PART_BYTES), what="the Notion zip",
        )  # fmt: skip
        files: dict[str, bytes] = {}
        others = 0
        budget = Budget(MAX_TEXT_BYTES)
        with ExitStack() as temporary:
            for info in sorted(parts.infos, key=lambda info: info.orig_filename):
                part = temporary.enter_context(inflate_to_file(outer, info))
                contents = read_zip(part, wanted=_wanted, limits=NOTION_ZIP, budget=budget, what=info.orig_filename)
                clash = sorted(set(files) & set(contents.files))
                if clash:
                    raise ImportRefused([f"{name}: in two parts of the export" for name in clash])
                files.update(contents.files)
                others += len(contents.others)
        return files, others


# --------------------------------------------------------------------------- pages


@dataclass
class Page:
    path: str
    key: str  # the page id (or, for a page without one in its name, its path)
    title: str
    content: str
    tags: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)  # page ids it links to


def _text(path: str, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MemoryInvalid("not UTF-8 text") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_page(path: str, raw: bytes) -> Page:
    """One exported page: title (heading, else file name), content, tags, link targets."""
    text = _text(path, raw).strip()
    name = path.rsplit("/", 1)[-1]
    match = _PAGE.match(name)
    key = match.group("id") if match else f"path:{path}"
    named = (match.group("title") if match else name[:-3]).strip() or "Untitled"
    heading = _HEADING.search(text)
    title = heading.group(1).strip() if heading else named
    content = text if text.startswith("# ") else (f"# {title}\n\n{text}" if text else f"# {title}")
    return Page(path=path, key=key, title=title, content=content, tags=_tags(text), targets=_targets(text))


def _properties(text: str) -> Iterator[tuple[str, str]]:
    """The ``Property: value`` lines right under the page's heading."""
    lines = text.split("\n")
    if not lines or not lines[0].startswith("# "):
        return
    index = 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    while index < len(lines) and (match := _PROPERTY.match(lines[index])):
        yield match.group(1).strip(), match.group(2).strip()
        index += 1


def _tags(text: str) -> list[str]:
    for name, value in _properties(text):
        if name.lower() == "tags":
            return [tag.strip() for tag in value.split(",") if tag.strip()]
    return []


def _targets(text: str) -> list[str]:
    """Page ids of the export this page links to (relative ``.md`` links and notion.so URLs)."""
    found: list[str] = []
    for raw in _LINK.findall(text):
        target = unquote(raw)
        web = target.startswith(("http://", "https://"))
        if web and "notion.so/" not in target and "notion.site/" not in target:
            continue
        if not web and not target.split("#", 1)[0].split("?", 1)[0].lower().endswith(".md"):
            continue  # a table, an image or another attachment
        match = _TARGET_ID.search(target.rsplit("/", 1)[-1].replace("-", " ").split(" ")[-1])
        if match:
            found.append(match.group(1))
    return found


# --------------------------------------------------------------------------- tables


def _normal(title: str) -> str:
    return _WORDS.sub(" ", title.lower()).strip()


@dataclass
class Table:
    path: str
    key: str  # the database id
    name: str
    folder: str  # where its rows' own pages are


def tables(paths: list[str]) -> list[Table]:
    """The export's databases, one each (``_all.csv`` preferred over the view's ``.csv``)."""
    chosen: dict[tuple[str, str], Table] = {}
    for path in sorted(paths):
        directory, _, name = path.rpartition("/")
        match = _TABLE.match(name)
        if match is None:
            continue
        stem = name[: -len("_all.csv")] if match.group("all") else name[: -len(".csv")]
        table = Table(
            path=path, key=match.group("id"), name=match.group("name").strip() or "Untitled",
            folder=f"{directory}/{stem}" if directory else stem,
        )  # fmt: skip
        place = (directory, match.group("id"))
        if place not in chosen or match.group("all"):
            chosen[place] = table
    return list(chosen.values())


def page_titles_by_folder(pages: list[Page]) -> dict[str, set[str]]:
    """Each folder's pages' titles (heading and file name, normalised), read once per import:
    a table's rows that have a page of their own are those pages."""
    titles: dict[str, set[str]] = {}
    for page in pages:
        folder, _, name = page.path.rpartition("/")
        titles.setdefault(folder, set()).update(_normal(title) for title in (page.title, _PAGE.sub(r"\g<title>", name)))
    return titles


def table_rows(table: Table, raw: bytes, own: set[str], report: ImportReport) -> list[PlannedNote]:
    """The rows of ``table`` that have no page of their own (``own``: the titles of the pages in
    its folder, from ``page_titles_by_folder``), as planned memories."""
    text = _text(table.path, raw)
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise MemoryInvalid(f"not a readable CSV table ({exc})") from None
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    if len(body) > MAX_ROWS:
        report.skipped.append(Skipped(table.path, f"{len(body) - MAX_ROWS:,} rows past the {MAX_ROWS:,}-row limit"))
        body = body[:MAX_ROWS]
    planned: list[PlannedNote] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(body, start=2):
        title = (row[0].strip() if row else "") or "Untitled"
        if _normal(title) in own or not any(cell.strip() for cell in row):
            continue
        lines = [f"# {title}", "", f"Database: {table.name}"]
        cells = zip(header[1:], row[1:], strict=False)  # a short row has no value for the last columns
        lines += [f"{column.strip()}: {value.strip()}" for column, value in cells if value.strip()]
        digest = hashlib.sha256(title.encode("utf-8")).hexdigest()[:16]
        seen[digest] = seen.get(digest, 0) + 1
        suffix = f":{seen[digest]}" if seen[digest] > 1 else ""
        label = f"{table.path} line {number}"
        content = "\n".join(lines)
        reason = too_long(content)
        if reason is not None:
            report.skipped.append(Skipped(label, reason))
            continue
        planned.append(PlannedNote(key=f"row:{table.key}:{digest}{suffix}", label=label,
                                   origin=f"notion:{table.key}:row:{digest}{suffix}", content=content))  # fmt: skip
    return planned


# --------------------------------------------------------------------------- the import


def notion_import(
    *,
    actor: Member,
    zip_bytes: bytes | IO[bytes],
    workspace: str | None = None,
    charge: Charge | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a Notion "Markdown & CSV" export zip; all or nothing (see the module docstring).
    ``charge``, ``progress``: see ``memory.vaults.common.store_plan``.

    Raises ``ImportRefused`` naming every unsafe entry, unreadable page or table, and every
    page or row the capture path would refuse (a secret, a NUL, bad tags), before storing.
    """
    if not isinstance(actor, Member) or not actor.is_active:
        raise PermissionDenied("only an active member has memories")
    workspace_value(workspace)
    files, other_files = notion_files(zip_bytes)
    return notion_import_files(
        actor=actor, files=files, other_files=other_files, workspace=workspace, charge=charge, progress=progress
    )


def notion_import_files(
    *,
    actor: Member,
    files: dict[str, bytes],
    other_files: int = 0,
    workspace: str | None = None,
    charge: Charge | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """``notion_import`` of an export already read (``notion_files``: its pages and tables by
    path, and how many other files it held)."""
    if not isinstance(actor, Member) or not actor.is_active:
        raise PermissionDenied("only an active member has memories")
    workspace_value(workspace)
    report = ImportReport(source=SOURCE)
    report.other_files = other_files
    problems: list[str] = []
    pages: list[Page] = []
    for path in sorted(name for name in files if name.lower().endswith(".md")):
        try:
            pages.append(read_page(path, files[path]))
        except MemoryInvalid as invalid:
            problems.append(f"{path}: {invalid}")
    known = {page.key for page in pages}
    planned: list[PlannedNote] = []
    for page in pages:
        reason = too_long(page.content)
        if reason is not None:
            report.skipped.append(Skipped(page.path, reason))
            continue
        links = [(target, LinkType.RELATES_TO.value) for target in page.targets if target != page.key]
        report.links_missing += sum(1 for target, _ in links if target not in known)
        origin = f"notion:{page.key}" if not page.key.startswith("path:") else _path_origin(page.path)
        planned.append(PlannedNote(key=page.key, label=page.path, origin=origin, content=page.content,
                                   tags=page.tags, links=[link for link in links if link[0] in known]))  # fmt: skip
    # Indexed once: each table looked through every page (N tables x N pages before the note
    # limit refused the import — 12 s at 12,000 of each).
    titles = page_titles_by_folder(pages)
    for table in tables([name for name in files if name.lower().endswith(".csv")]):
        try:
            planned.extend(table_rows(table, files[table.path], titles.get(table.folder, set()), report))
        except MemoryInvalid as invalid:
            problems.append(f"{table.path}: {invalid}")
        if len(planned) > MAX_NOTES:
            break  # refused below: the tables left would only cost time (a 226 KB zip took 16 s)
    _refuse_repeated_pages(planned, problems)
    check_plan(planned, problems)
    return store_plan(
        actor=actor, notes=planned, source=SOURCE, workspace=workspace, report=report, charge=charge, progress=progress
    )


def _path_origin(path: str) -> str:
    return f"notion:file:{hashlib.sha256(path.encode('utf-8')).hexdigest()[:32]}"


def _refuse_repeated_pages(planned: list[PlannedNote], problems: list[str]) -> None:
    """Two files with one page id would be one memory written twice: name them instead."""
    first: dict[str, str] = {}
    for note in planned:
        if note.key in first:
            problems.append(f"{note.label}: the same Notion page as {first[note.key]}")
        first.setdefault(note.key, note.label)
