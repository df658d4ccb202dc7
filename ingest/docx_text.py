"""The text of a Word document (.docx), read as a stream of its main part's XML.

python-docx, used before, builds an object for every element of the document: a 762 KB file of
300,000 short paragraphs held 360 MB and 10 s, and a 25 MB upload could ask for gigabytes. Here
lxml's parser-target interface reads ``word/document.xml`` (or whichever part ``_rels/.rels``
names as the main document) as events: no tree is built, not even of the open elements'
attributes, so memory follows the text, and the text (separators included) stops at the
character limit.

What counts as text follows python-docx's reading of a run: ``w:t``; a tab (``w:tab``,
``w:ptab``) as a tab; a line break (``w:br`` of the text-wrapping kind, ``w:cr``) as a new line; a
non-breaking hyphen as "-". Tracked deletions and the old place of moved text (``w:del``,
``w:moveFrom``, with whatever breaks and tabs they hold), field codes and the fallback copy of a
text box (``mc:Fallback``) are not text. Each paragraph is a line; a table row is one line, its
cells joined by " | " (a cell's own paragraphs by new lines), in the document's order.
"""

from __future__ import annotations

import posixpath
import zipfile
import zlib

from lxml import etree

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
RELATIONSHIP = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
OFFICE_DOCUMENT = "/officeDocument"
DEFAULT_PART = "word/document.xml"
# Elements whose whole content is not the document's text.
SKIPPED = frozenset({FALLBACK, f"{W}del", f"{W}moveFrom"})
_RUN_TEXT = {f"{W}tab": "\t", f"{W}ptab": "\t", f"{W}cr": "\n", f"{W}noBreakHyphen": "-"}
CELL_SEPARATOR = " | "
READ_BYTES = 64 * 1024
# What a damaged or unusual archive raises while a part is read: a bad deflate stream, a
# compression method zipfile lacks, an encrypted member; each is "could not be read".
ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError, OSError)


class TooLong(Exception):
    """The document holds more than the allowed number of characters."""


def main_part(archive: zipfile.ZipFile) -> str:
    """The name of the main document part: the package relationship's target, else the usual name."""
    try:
        with archive.open("_rels/.rels") as stream:
            root = etree.parse(stream, _parser()).getroot()
    except (KeyError, etree.XMLSyntaxError, *ARCHIVE_ERRORS):
        return DEFAULT_PART
    names = set(archive.namelist())
    for relationship in root.iter(RELATIONSHIP):
        if relationship.get("Type", "").endswith(OFFICE_DOCUMENT):
            target = posixpath.normpath(str(relationship.get("Target", "")).lstrip("/"))
            if target in names:
                return target
    return DEFAULT_PART


def docx_text(archive: zipfile.ZipFile, max_chars: int) -> str:
    """The document's text, one paragraph or table row a line; raises ``TooLong`` past ``max_chars``.

    Raises ``etree.XMLSyntaxError`` (damaged XML, or nesting past libxml2's depth limit),
    ``KeyError`` (no main part) and ``ARCHIVE_ERRORS`` (a damaged member) for the caller to report.
    """
    reader = _Reader(max_chars)
    parser = etree.XMLParser(target=reader, resolve_entities=False, no_network=True, load_dtd=False)
    with archive.open(main_part(archive)) as stream:
        while block := stream.read(READ_BYTES):
            parser.feed(block)
    parser.close()
    return "\n".join(reader.lines).strip()


class _Reader:
    """An lxml parser target: the open elements' tags, and the text of open paragraphs, cells, rows."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.total = 0
        self.open: list[str] = []  # tags of the open elements
        self.lines: list[str] = []  # the body's lines
        self.containers: list[list[str]] = [self.lines]  # the body, then each open table cell
        self.paragraphs: list[list[str]] = []  # text of each open paragraph
        self.rows: list[list[str]] = []  # cells of each open table row
        self.skipping = 0  # open skipped elements

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        in_run = bool(self.open) and self.open[-1] == f"{W}r"
        self.open.append(tag)
        if tag in SKIPPED:
            self.skipping += 1
        if self.skipping:
            return
        if tag == f"{W}p":
            self.paragraphs.append([])
        elif tag == f"{W}tr":
            self.rows.append([])
        elif tag == f"{W}tc":
            self.containers.append([])
        elif tag in _RUN_TEXT and in_run:
            self._add(_RUN_TEXT[tag])
        elif tag == f"{W}br" and in_run and attrib.get(f"{W}type", "textWrapping") == "textWrapping":
            self._add("\n")

    def data(self, text: str) -> None:
        if not self.skipping and self.open and self.open[-1] == f"{W}t":
            self._add(text)

    def end(self, tag: str) -> None:
        if self.open:
            self.open.pop()
        if tag in SKIPPED:
            self.skipping = max(self.skipping - 1, 0)
            return
        if self.skipping:
            return
        if tag == f"{W}p" and self.paragraphs:
            self._line(self.containers[-1], "".join(self.paragraphs.pop()))
        elif tag == f"{W}tc" and len(self.containers) > 1:
            cell = "\n".join(self.containers.pop())
            if self.rows:
                if self.rows[-1]:
                    self._grow(len(CELL_SEPARATOR))
                self.rows[-1].append(cell)
        elif tag == f"{W}tr" and self.rows:
            self._line(self.containers[-1], CELL_SEPARATOR.join(self.rows.pop()))

    def close(self) -> None:
        return None

    def _line(self, container: list[str], line: str) -> None:
        if container:
            self._grow(1)  # the new line that joins it to the one before
        container.append(line)

    def _add(self, text: str) -> None:
        if not self.paragraphs:
            return  # text outside any paragraph is not shown by Word either
        self._grow(len(text))
        self.paragraphs[-1].append(text)

    def _grow(self, count: int) -> None:
        self.total += count
        if self.total > self.max_chars:
            raise TooLong


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
