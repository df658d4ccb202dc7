"""The live corpus as files a person can read without this product, for one principal.

``corpus_files(principal)`` yields, in a fixed order: every page the principal can read as
``<path>`` (Markdown with its frontmatter), every capture they can read as
``captures/<key>.md`` (metadata and extracted text, masked), ``figures.yml`` (every figure
value on those pages, current and past — a past one only if it was recorded while the page
was readable to them) and a ``README.md`` index. ``zip_stream`` packs
them with fixed timestamps and permissions, so the same corpus gives the same bytes, and
yields the archive as it is written (rows are read in batches; nothing holds the whole
corpus or the whole zip in memory).

It is two steps, both public because the git mirror (``mirror``) uses them apart:
``corpus_plan`` names every file from narrow queries (path, title, a stamp that moves when
the row does) and ``corpus_render`` reads the content of the files asked for. The export
renders every file; the mirror renders only those whose stamp or citations changed.

A page's frontmatter is exported as its author wrote it, unless it names a page or a
capture the principal cannot read; then it is the parsed frontmatter with those left out
(an export must not tell a reader that a hidden path exists).
"""

from __future__ import annotations

import bisect
import datetime as dt
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import yaml

from brain.text.secrets import redact
from corpus.frontmatter import frontmatter_text
from corpus.models import Figure, Page, Revision, Source
from corpus.selectors import ReferenceFilter, frontmatter_references
from corpus.services import document_from_revision
from grants.predicates import effective_permissions
from grants.principals import Principal, SystemPrincipal

BATCH = 200
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: no clock in the bytes


@dataclass(frozen=True)
class ExportFile:
    path: str
    data: bytes


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=True, allow_unicode=True, default_flow_style=False)


def _page_markdown(page: Page, references: ReferenceFilter) -> str:
    revision: Any = page.current_revision
    frontmatter: dict[str, Any] = revision.frontmatter
    shown = references.seen(frontmatter)
    related, sources = frontmatter_references(frontmatter)
    hides_nothing = shown.get("related", related) == related and shown.get("sources", sources) == sources
    if hides_nothing and revision.frontmatter_text:
        header = (
            revision.frontmatter_text if revision.frontmatter_text.endswith("\n") else revision.frontmatter_text + "\n"
        )
    else:
        header = yaml.safe_dump(shown, sort_keys=False, allow_unicode=True)
    return f"---\n{header}---\n\n{revision.body.lstrip(chr(10))}"


class Originals(Protocol):
    """Where captures' original files live (the ``ingest`` app registers itself in ``ready``:
    the corpus does not depend on the app above it)."""

    def names(self, source_ids: list[int]) -> dict[int, str]:
        """Source id → the original's file name, for those of ``source_ids`` that have one."""
        ...

    def read(self, source_id: int) -> bytes | None:
        """The original's bytes (None when its file is missing from storage)."""
        ...


_originals: list[Originals] = []


def register_originals(store: Originals) -> None:
    _originals.append(store)


class Entry(NamedTuple):
    """One file of the materialised tree, named before its content is read.

    ``stamp`` changes whenever the file's own row changes (a page's current revision, a
    capture's ``updated_at``); ``figures.yml`` and ``README.md`` have none — they are read
    from every row at once. (A named tuple: a plan of 10k files is built on every mirror run.)
    """

    name: str
    kind: str  # "page" | "capture" | "original" | "figures" | "readme"
    subject: str = ""  # the page's path or the capture's key
    pk: int | None = None
    stamp: str = ""
    title: str = ""


@dataclass(frozen=True)
class Rendered:
    """A file's bytes, the stamp of the row they were read from, and what it cites
    (``page:<path>``/``capture:<key>``): whether a citation is shown depends on the reader."""

    entry: Entry
    file: ExportFile
    stamp: str
    references: tuple[str, ...] = ()


def corpus_plan(principal: Principal, *, originals: bool = False) -> list[Entry]:
    """Every file of ``principal``'s tree, in the tree's order, from three narrow queries.

    Names are fixed here: pages at their paths, captures at ``captures/<key>.md``, with
    ``originals`` each capture's uploaded file at ``originals/<key>/<file name>``, then
    ``figures.yml`` and ``README.md`` (each with ``~2`` … when a page already holds the name).
    """
    plan: list[Entry] = []
    taken = _Names()
    pages = Page.objects.visible_to(principal, "read").order_by("path")
    for pk, path, title, revision in pages.values_list("pk", "path", "title", "current_revision_id").iterator(
        chunk_size=2000
    ):
        plan.append(Entry(taken.claim(path), "page", path, pk, str(revision), title))
    captures = Source.objects.visible_to(principal, "read").order_by("key")
    keys: list[tuple[int, str]] = []
    for pk, key, updated in captures.values_list("pk", "key", "updated_at").iterator(chunk_size=2000):
        keys.append((pk, key))
        plan.append(Entry(taken.free(f"captures/{key}", ".md"), "capture", key, pk, updated.isoformat()))
    if originals:
        for start in range(0, len(keys), 2000):
            batch = keys[start : start + 2000]
            names: dict[int, str] = {}
            for store in _originals:
                names.update(store.names([pk for pk, _ in batch]))
            for pk, key in batch:
                if pk in names:
                    stem, _, suffix = _file_name(names[pk]).rpartition(".")
                    name = taken.free(f"{ORIGINALS}{key}/{stem or suffix}", f".{suffix}" if stem else "")
                    plan.append(Entry(name, "original", key, pk))
    plan.append(Entry(taken.free("figures", ".yml"), "figures"))
    plan.append(Entry(taken.free("README", ".md"), "readme"))
    return plan


def corpus_render(principal: Principal, plan: list[Entry], wanted: list[Entry] | None = None) -> Iterator[Rendered]:
    """The files of ``wanted`` (default: the whole ``plan``), in order, read in batches.

    Rows are read again under ``principal``'s access predicate: a page that stopped being
    readable (or was retired) since the plan is left out, never shown. ``README.md`` indexes
    the plan.
    """
    wanted = plan if wanted is None else wanted
    pages = [entry for entry in wanted if entry.kind == "page"]
    for start in range(0, len(pages), BATCH):
        yield from _page_batch(principal, pages[start : start + BATCH])
    captures = [entry for entry in wanted if entry.kind == "capture"]
    for start in range(0, len(captures), BATCH):
        batch = captures[start : start + BATCH]
        rows = Source.objects.visible_to(principal, "read").in_bulk([entry.pk for entry in batch])
        for entry in batch:
            source = rows.get(entry.pk)  # type: ignore[arg-type]
            if source is not None:
                data = _capture_markdown(source).encode("utf-8")
                yield Rendered(entry, ExportFile(entry.name, data), source.updated_at.isoformat())
    # Originals and the README are written last, after a download may have run for minutes:
    # each is weighed again as it is written, like the pages and captures above (an original
    # of a capture the reader lost meanwhile, or a hidden page's title in the README, leaked).
    originals = [entry for entry in wanted if entry.kind == "original"]
    readable_captures = _still_readable(Source, principal, [entry.pk for entry in originals])
    for entry in wanted:
        if entry.kind == "original" and entry.pk in readable_captures:
            original = next((found for store in _originals if (found := store.read(entry.pk or 0)) is not None), None)
            if original is not None:
                yield Rendered(entry, ExportFile(entry.name, original), "")
        elif entry.kind == "figures":
            yield Rendered(entry, ExportFile(entry.name, _figures(principal)), "")
        elif entry.kind == "readme":
            yield Rendered(entry, ExportFile(entry.name, _readme(principal, plan)), "")


def _still_readable(model: type[Page] | type[Source], principal: Principal, pks: list[int | None]) -> set[int]:
    """Which of ``pks`` ``principal`` may read now (in batches: a plan may hold 100,000)."""
    readable: set[int] = set()
    wanted = [pk for pk in pks if pk is not None]
    for start in range(0, len(wanted), BATCH):
        batch = wanted[start : start + BATCH]
        readable.update(model.objects.visible_to(principal, "read").filter(pk__in=batch).values_list("pk", flat=True))
    return readable


def _page_batch(principal: Principal, batch: list[Entry]) -> Iterator[Rendered]:
    rows = (
        Page.objects.visible_to(principal, "read")
        .select_related("current_revision")
        .in_bulk([entry.pk for entry in batch])
    )
    found = [(entry, rows[entry.pk]) for entry in batch if entry.pk in rows]
    references = ReferenceFilter(principal, [page.current_revision.frontmatter for _, page in found])  # type: ignore[union-attr]
    for entry, page in found:
        related, sources = frontmatter_references(page.current_revision.frontmatter)  # type: ignore[union-attr]
        cited = tuple(f"page:{path}" for path in related) + tuple(sources)
        data = _page_markdown(page, references).encode("utf-8")
        yield Rendered(entry, ExportFile(page.path, data), str(page.current_revision_id), cited)


README_HEADING = "# Brain export"
_CAPTURE_KEYS = ("key", "captured_at", "sha256")  # what every exported capture's header holds, and no page's


ORIGINALS = "originals/"  # where an export with originals puts each capture's uploaded file


def export_own_files(files: list[tuple[str, str]]) -> set[str]:
    """The paths among an import's ``files`` that are an export's own, not pages: each one
    ``written_by_export`` names, and — when its README says the archive is an export — the
    uploaded files under ``originals/`` (an upload named notes.md is no page either)."""
    own = {path for path, markdown in files if written_by_export(path, markdown)}
    if "README.md" in own:
        own.update(path for path, _ in files if path.startswith(ORIGINALS))
    return own


def written_by_export(path: str, markdown: str) -> bool:
    """Whether an imported file is the export's own, not a page: its ``README.md`` index, or a
    capture (``captures/<key>.md``, made from a source; sources are captured, never imported
    as pages). An export edited and imported again brings them along; they are passed over."""
    if path == "README.md" and markdown.startswith(README_HEADING):
        return True
    header = frontmatter_text(markdown)  # the page parser's own split ("" without a block)
    keys = {line.split(":", 1)[0] for line in header.splitlines() if ":" in line and not line.startswith(" ")}
    return all(key in keys for key in _CAPTURE_KEYS) and "type" not in keys


def export_folder(path: str, markdown: str) -> str | None:
    """The folder an export was zipped inside (its README is ``<folder>/README.md``), or None."""
    folder, _, name = path.rpartition("/")
    return folder if folder and name == "README.md" and markdown.startswith(README_HEADING) else None


def _capture_markdown(source: Source) -> str:
    header = {
        "key": source.key, "kind": source.kind, "title": source.title, "uri": source.uri,
        "captured_at": source.captured_at.isoformat(), "tags": sorted(source.tags), "category": source.category,
        "sensitivity": source.get_sensitivity_display(), "sha256": source.sha256,
    }  # fmt: skip
    return f"---\n{_dump(header)}---\n\n{redact(source.text)}\n"


def _figures(principal: Principal) -> bytes:
    rows = (
        Figure.objects.visible_to(principal, "read")
        .select_related("page", "source")
        .order_by("page__path", "key", "as_of", "id")
    )
    figures: dict[str, dict[str, list[tuple[bool, dict[str, Any]]]]] = {}
    records = list(rows.iterator(chunk_size=BATCH))
    as_recorded = _readable_as_recorded(principal, records)
    # A figure on a readable page may cite a capture the reader cannot read: it is not named.
    # The same filter as the pages' citations, on just the cited captures.
    cited = ReferenceFilter(principal, [{"sources": sorted({f.source.key for f in records if f.source is not None})}])
    for figure in records:
        source = figure.source.key if figure.source is not None else None
        shown = source is not None and (cited.everything or source in cited.sources)
        figures.setdefault(figure.page.path, {}).setdefault(figure.key, []).append((
            figure.pk in as_recorded,
            {"value": format(figure.value.normalize(), "f"), "unit": figure.unit, "as_of": figure.as_of.isoformat(),
             "source": f"capture:{source}" if shown else None},
        ))  # fmt: skip
    document = {
        page: {
            key: {"current": values[-1][1], "history": [value for shown, value in values if shown]}
            for key, values in keys.items()
        }
        for page, keys in figures.items()
    }
    return _dump(document).encode("utf-8")


def _readable_as_recorded(principal: Principal, records: list[Figure]) -> set[int]:
    """Of figure values on pages ``principal`` reads now, the ids of those recorded while the
    page was readable to them — the page history's rule: what was written while the page was
    restricted (or at a path they cannot read, before a move) stays out of a reader's history,
    though its page is open now.

    A value is judged by the revision it went live under (``Figure.recorded_under``, kept
    through moves). One recorded before that was kept is judged by its page row's revision
    approved last before it was recorded, or hidden when it is older than every one (it came
    with a move). A constant number of queries.
    """
    if isinstance(principal, SystemPrincipal) or not records:
        return {figure.pk for figure in records}
    judged_by = {figure.pk: figure.recorded_under_id for figure in records if figure.recorded_under_id is not None}
    older = [figure for figure in records if figure.recorded_under_id is None]
    timelines: dict[int, tuple[list[dt.datetime], list[int]]] = {}
    if older:
        revisions = Revision.objects.filter(page_id__in={figure.page_id for figure in older}, promoted_at__isnull=False)
        for revision_id, page_id, promoted_at in revisions.order_by("page_id", "promoted_at", "id").values_list(
            "id", "page_id", "promoted_at"
        ):
            if promoted_at is not None:  # the filter's promise; the type does not carry it
                times, ids = timelines.setdefault(page_id, ([], []))
                times.append(promoted_at)
                ids.append(revision_id)
    for figure in older:
        times, ids = timelines.get(figure.page_id, ([], []))
        place = bisect.bisect_right(times, figure.created_at) - 1
        if place >= 0:
            judged_by[figure.pk] = ids[place]
    scopes: dict[int, tuple[str, str | None, int]] = {}
    for revision in Revision.objects.filter(pk__in=set(judged_by.values())):
        document = document_from_revision(revision)
        scopes[revision.pk] = (document.path, document.category, int(document.sensitivity))
    distinct = sorted(set(scopes.values()), key=str)
    readable = {scope for scope, best in zip(distinct, effective_permissions(principal, distinct), strict=True) if best}
    return {figure_id for figure_id, revision_id in judged_by.items() if scopes.get(revision_id) in readable}


# A generated file name's UTF-8 bytes: file systems allow 255 a name (ext4, APFS, NTFS), and
# a taken name gains "~N" before its suffix.
MAX_NAME_BYTES = 200
MAX_SUFFIX_BYTES = 16


def _file_name(name: str) -> str:
    """A stored file name as one safe path segment (no folders, no dot-files, no control
    characters) that every file system can hold: at most ``MAX_NAME_BYTES`` of UTF-8, its
    suffix kept (cut by characters, "議事録" fifty times made a 360-byte name without ".txt")."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(c if c.isalnum() or c in "._- " else "_" for c in base).strip(" .")
    stem, dot, suffix = cleaned.rpartition(".")
    if not stem or len(suffix.encode("utf-8")) > MAX_SUFFIX_BYTES:
        stem, dot, suffix = cleaned, "", ""
    room = MAX_NAME_BYTES - len(f"{dot}{suffix}".encode())
    stem = stem.encode("utf-8")[:room].decode("utf-8", "ignore").rstrip(" .")
    return f"{stem}{dot}{suffix}" if stem else "original"


def _readme(principal: Principal, plan: list[Entry]) -> bytes:
    """The index of the plan's pages and counts, of what ``principal`` may still read."""
    planned_pages = [entry for entry in plan if entry.kind == "page"]
    readable_pages = _still_readable(Page, principal, [entry.pk for entry in planned_pages])
    pages = [entry for entry in planned_pages if entry.pk in readable_pages]
    capture_entries = [entry for entry in plan if entry.kind in ("capture", "original")]
    readable = _still_readable(Source, principal, [entry.pk for entry in capture_entries])
    captures = sum(1 for entry in capture_entries if entry.kind == "capture" and entry.pk in readable)
    originals = sum(1 for entry in capture_entries if entry.kind == "original" and entry.pk in readable)
    figures = next(entry.name for entry in plan if entry.kind == "figures")
    with_originals = f" ({originals} original files under `originals/`)" if originals else ""
    lines = [
        README_HEADING,
        "",
        f"{len(pages)} pages and {captures} captures{with_originals}; figures in `{figures}`.",
        "",
    ]
    lines += [f"- [{entry.title}]({entry.subject})" for entry in pages]
    return ("\n".join(lines) + "\n").encode("utf-8")


def corpus_files(principal: Principal) -> Iterator[ExportFile]:
    """Every file of ``principal``'s materialised corpus, in a fixed order (README last)."""
    plan = corpus_plan(principal)
    for rendered in corpus_render(principal, plan):
        yield rendered.file


class _Names:
    """The names of one export's tree: every name a file, never also a folder.

    Lower-cased, so a case-insensitive file system merges nothing. Pages keep their paths;
    every generated name (a capture, an original, figures.yml, README.md) moves aside with
    ``~2``, ``~3`` … before its suffix when it is taken as a file or a folder, and a folder on
    its way that is already a file (``captures/x.md`` beside a capture keyed ``x.md/y``) moves
    aside the same way — an archive holding ``a.md`` and ``a.md/b.md`` cannot be unpacked, and
    the mirror silently dropped one of them.
    """

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.folders: set[str] = set()
        # Where each moved-aside name's count goes on ("~N"): counted up from 2 for every
        # repeat, thousands of keys differing only in case took seconds to minutes.
        self.following: dict[str, int] = {}

    def claim(self, name: str) -> str:
        self.files.add(name.lower())
        parts = name.lower().split("/")
        self.folders.update("/".join(parts[:end]) for end in range(1, len(parts)))
        return name

    def free(self, stem: str, suffix: str) -> str:
        """``stem + suffix``, moved aside where it would collide (see the class); deterministic."""
        *folders, last = stem.split("/")
        for index, segment in enumerate(folders):
            number = 1
            while "/".join(folders[: index + 1]).lower() in self.files:
                number += 1
                folders[index] = f"{segment}~{number}"
        name = "/".join([*folders, last + suffix])
        wanted = name.lower()
        number = self.following.get(wanted, 1)
        while name.lower() in self.files or name.lower() in self.folders:
            number += 1
            name = "/".join([*folders, f"{last}~{number}{suffix}"])
        self.following[wanted] = number
        return self.claim(name)


class _Pipe(io.RawIOBase):
    """An unseekable sink ``zipfile`` writes to; ``drain`` hands over what was written so far."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.chunks.append(chunk)
        self.position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.position

    def drain(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks = []
        return data


@dataclass
class Counter:
    files: int = 0
    bytes: int = 0


def zip_stream(files: Iterator[ExportFile], counter: Counter | None = None) -> Iterator[bytes]:
    """A deterministic zip of ``files``, yielded piece by piece as it is written."""
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as archive:  # type: ignore[arg-type]
        for file in files:
            info = zipfile.ZipInfo(file.path, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, file.data)
            if counter is not None:
                counter.files += 1
                counter.bytes += len(file.data)
            yield pipe.drain()
    yield pipe.drain()


def export_name(today: dt.date | None = None) -> str:
    return f"brain-export-{(today or dt.date.today()).isoformat()}.zip"
