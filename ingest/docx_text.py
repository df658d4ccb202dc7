"""The text of a Word document (.docx), read as a stream of its main part's XML.

python-docx, used before, builds an object for every element of the document: a 762 KB file of
300,000 short paragraphs held 360 MB and 10 s, and a 25 MB upload could ask for gigabytes. Here
lxml's ``iterparse`` reads ``word/document.xml`` (or whichever part ``_rels/.rels`` names as the
main document) and every element is dropped once read, so memory follows the text, and the text
stops at the character limit.

What counts as text follows python-docx's reading of a run: ``w:t``; a tab (``w:tab``,
``w:ptab``) as a tab; a line break (``w:br`` of the text-wrapping kind, ``w:cr``) as a new line; a
non-breaking hyphen as "-". Deleted text (``w:delText``), field codes and the fallback copy of
a text box (``mc:Fallback``) are not text. Each paragraph is a line; a table row is one line, its
cells joined by " | " (a cell's own paragraphs by new lines), in the document's order.
"""

from __future__ import annotations

import posixpath
import zipfile

from lxml import etree

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
RELATIONSHIP = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
OFFICE_DOCUMENT = "/officeDocument"
DEFAULT_PART = "word/document.xml"
_RUN_TEXT = {f"{W}tab": "\t", f"{W}ptab": "\t", f"{W}cr": "\n", f"{W}noBreakHyphen": "-"}


class TooLong(Exception):
    """The document holds more than the allowed number of characters."""


def main_part(archive: zipfile.ZipFile) -> str:
    """The name of the main document part: the package relationship's target, else the usual name."""
    try:
        with archive.open("_rels/.rels") as stream:
            root = etree.parse(stream, _parser()).getroot()
    except (KeyError, etree.XMLSyntaxError):
        return DEFAULT_PART
    for relationship in root.iter(RELATIONSHIP):
        if relationship.get("Type", "").endswith(OFFICE_DOCUMENT):
            target = posixpath.normpath(str(relationship.get("Target", "")).lstrip("/"))
            if target in archive.namelist():
                return target
    return DEFAULT_PART


def docx_text(archive: zipfile.ZipFile, max_chars: int) -> str:
    """The document's text, one paragraph or table row a line; raises ``TooLong`` past ``max_chars``.

    Raises ``etree.XMLSyntaxError`` (damaged XML, or nesting past libxml2's depth limit) and
    ``KeyError`` (no main part) for the caller to report.
    """
    reader = _Reader(max_chars)
    with archive.open(main_part(archive)) as stream:
        for event, element in etree.iterparse(
            stream, events=("start", "end"), resolve_entities=False, no_network=True, load_dtd=False
        ):
            if event == "start":
                reader.start(element.tag)
                continue
            reader.end(element)
            # Dropping what has been read keeps memory to the open elements.
            element.clear(keep_tail=True)
            parent = element.getparent()
            if parent is not None:
                while element.getprevious() is not None:
                    del parent[0]
    return "\n".join(reader.lines).strip()


class _Reader:
    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.total = 0
        self.lines: list[str] = []  # the body's lines
        self.containers: list[list[str]] = [self.lines]  # the body, then each open table cell
        self.paragraphs: list[list[str]] = []  # text of each open paragraph
        self.rows: list[list[str]] = []  # cells of each open table row
        self.skipping = 0

    def start(self, tag: str) -> None:
        if tag == FALLBACK:
            self.skipping += 1
        if self.skipping:
            return
        if tag == f"{W}p":
            self.paragraphs.append([])
        elif tag == f"{W}tr":
            self.rows.append([])
        elif tag == f"{W}tc":
            self.containers.append([])

    def end(self, element: etree._Element) -> None:
        tag = element.tag
        if tag == FALLBACK:
            self.skipping -= 1
            return
        if self.skipping:
            return
        if tag == f"{W}t":
            self._add(element.text or "")
        elif tag in _RUN_TEXT and _in_run(element):
            self._add(_RUN_TEXT[tag])
        elif tag == f"{W}br" and _in_run(element) and element.get(f"{W}type", "textWrapping") == "textWrapping":
            self._add("\n")
        elif tag == f"{W}p" and self.paragraphs:
            self.containers[-1].append("".join(self.paragraphs.pop()))
        elif tag == f"{W}tc" and len(self.containers) > 1:
            cell = "\n".join(self.containers.pop())
            if self.rows:
                self.rows[-1].append(cell)
        elif tag == f"{W}tr" and self.rows:
            self.containers[-1].append(" | ".join(self.rows.pop()))

    def _add(self, text: str) -> None:
        if not self.paragraphs:
            return  # text outside any paragraph is not shown by Word either
        self.total += len(text)
        if self.total > self.max_chars:
            raise TooLong
        self.paragraphs[-1].append(text)


def _in_run(element: etree._Element) -> bool:
    parent = element.getparent()
    return parent is not None and parent.tag == f"{W}r"


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
