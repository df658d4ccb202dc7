"""The live corpus as files a person can read without this product, for one principal.

``corpus_files(principal)`` yields, in a fixed order: every page the principal can read as
``<path>`` (Markdown with its frontmatter), every capture they can read as
``captures/<key>.md`` (metadata and extracted text, masked), ``figures.yml`` (every figure
value on those pages, current and past) and a ``README.md`` index. ``zip_stream`` packs
them with fixed timestamps and permissions, so the same corpus gives the same bytes, and
yields the archive as it is written (rows are read in batches; nothing holds the whole
corpus or the whole zip in memory).

A page's frontmatter is exported as its author wrote it, unless it names a page or a
capture the principal cannot read; then it is the parsed frontmatter with those left out
(an export must not tell a reader that a hidden path exists).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from brain.text.secrets import redact
from corpus.models import Figure, Page, Source
from corpus.selectors import ReferenceFilter, _references
from grants.principals import Principal

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
    related, sources = _references(frontmatter)
    hides_nothing = shown.get("related", related) == related and shown.get("sources", sources) == sources
    if hides_nothing and revision.frontmatter_text:
        header = (
            revision.frontmatter_text if revision.frontmatter_text.endswith("\n") else revision.frontmatter_text + "\n"
        )
    else:
        header = yaml.safe_dump(shown, sort_keys=False, allow_unicode=True)
    return f"---\n{header}---\n\n{revision.body.lstrip(chr(10))}"


def _pages(principal: Principal) -> Iterator[tuple[ExportFile, tuple[str, str]]]:
    visible = Page.objects.visible_to(principal, "read").select_related("current_revision").order_by("path")
    batch: list[Page] = []
    for page in visible.iterator(chunk_size=BATCH):
        batch.append(page)
        if len(batch) == BATCH:
            yield from _page_batch(principal, batch)
            batch = []
    yield from _page_batch(principal, batch)


def _page_batch(principal: Principal, batch: list[Page]) -> Iterator[tuple[ExportFile, tuple[str, str]]]:
    if not batch:
        return
    references = ReferenceFilter(principal, [page.current_revision.frontmatter for page in batch])  # type: ignore[union-attr]
    for page in batch:
        yield ExportFile(page.path, _page_markdown(page, references).encode("utf-8")), (page.path, page.title)


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
    figures: dict[str, dict[str, list[dict[str, Any]]]] = {}
    records = list(rows.iterator(chunk_size=BATCH))
    # A figure on a readable page may cite a capture the reader cannot read: it is not named.
    # The same filter as the pages' citations, on just the cited captures.
    cited = ReferenceFilter(principal, [{"sources": sorted({f.source.key for f in records if f.source is not None})}])
    for figure in records:
        source = figure.source.key if figure.source is not None else None
        shown = source is not None and (cited.everything or source in cited.sources)
        figures.setdefault(figure.page.path, {}).setdefault(figure.key, []).append(
            {"value": format(figure.value.normalize(), "f"), "unit": figure.unit, "as_of": figure.as_of.isoformat(),
             "source": f"capture:{source}" if shown else None}
        )  # fmt: skip
    document = {
        page: {key: {"current": values[-1], "history": values} for key, values in keys.items()}
        for page, keys in figures.items()
    }
    return _dump(document).encode("utf-8")


def corpus_files(principal: Principal) -> Iterator[ExportFile]:
    """Every file of ``principal``'s materialised corpus, in a fixed order (README last)."""
    index: list[tuple[str, str]] = []
    taken: set[str] = set()  # lower-cased: a case-insensitive file system must not merge two names
    for file, entry in _pages(principal):
        index.append(entry)
        taken.add(file.path.lower())
        yield file
    captures = 0
    for source in Source.objects.visible_to(principal, "read").order_by("key").iterator(chunk_size=BATCH):
        captures += 1
        yield ExportFile(_free(f"captures/{source.key}", ".md", taken), _capture_markdown(source).encode("utf-8"))
    yield ExportFile(_free("figures", ".yml", taken), _figures(principal))
    lines = ["# Brain export", "", f"{len(index)} pages and {captures} captures; figures in `figures.yml`.", ""]
    lines += [f"- [{title}]({path})" for path, title in index]
    yield ExportFile(_free("README", ".md", taken), ("\n".join(lines) + "\n").encode("utf-8"))


def _free(stem: str, suffix: str, taken: set[str]) -> str:
    """``stem + suffix``, or with ``~2``, ``~3`` … before the suffix when a page already has that
    name (a page may live at ``captures/x.md``); deterministic, and never overwrites a file."""
    name, number = stem + suffix, 1
    while name.lower() in taken:
        number += 1
        name = f"{stem}~{number}{suffix}"
    taken.add(name.lower())
    return name


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
