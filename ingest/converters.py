"""Bytes to text: type sniffing by content, and one converter per type.

Libraries do the parsing (pypdf, webvtt-py; Word documents and HTML through lxml's streaming
parsers, in ``ingest.docx_text`` and ``brain.text.html``; SubRip is read here, in linear time);
this module only chooses, bounds and reports. Every conversion runs
within a CPU budget (``BRAIN_INGEST_CPU_SECONDS``). Every limit raises ``ConversionFailed`` with a reason a
person can act on, before memory is exhausted: encrypted PDFs, too many pages, archives
that expand too much (zip bombs), text past the character limit.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import signal
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version

from django.conf import settings

from brain.text.html import html_text
from brain.zips import directory_problem
from ingest.docx_text import ARCHIVE_ERRORS, TooLong, docx_text

TYPES = ("markdown", "text", "html", "pdf", "docx", "vtt", "srt")
# Versions of the readers written here (recorded on each extraction, like a library's version).
DOCX_VERSION = "2"
HTML_VERSION = "2"
# A SubRip file opens with a cue number and a timing line. Matched on the head of the text with
# its leading blank lines stripped, and without two whitespace runs that may both take a line
# break: "\s*\r?\n\s*" tried every split of a run of newlines (quadratic: 40 KB took 17 s, in
# the upload request, before its permission check).
# Entries a zip may declare before it is opened (a Word document holds tens).
MAX_ZIP_ENTRIES = 10_000
_SRT_START = re.compile(r"\d+(?:[ \t]*\r?\n)+[ \t]*\d{2}:\d{2}:\d{2}[,.]\d{3}[ \t]*-->")


class ConversionFailed(Exception):
    """The bytes cannot become text; the message says why in plain words."""


class Unsupported(ValueError):
    """The bytes are not a type we read."""


@dataclass(frozen=True)
class Converted:
    text: str
    extractor: str
    extractor_version: str
    pages: int | None = None


def limits() -> dict[str, int]:
    return dict(settings.BRAIN_INGEST_LIMITS)


def sniff(data: bytes, filename: str = "") -> str:
    """The document type from its content (the extension only tells Markdown from plain text)."""
    head = data[:2048]
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        # A Word document holds tens of entries; its directory is bounded from the end record
        # before zipfile builds an object per entry (500,000 entries: 2.8 s and ~210 MB here).
        problem = directory_problem(data, max_entries=MAX_ZIP_ENTRIES, what="the zip")
        if problem is not None:
            raise Unsupported(f"{problem}; a Word document has far fewer")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                if "word/document.xml" in archive.namelist():
                    return "docx"
        except (zipfile.BadZipFile, UnicodeDecodeError, ValueError, OSError, EOFError):
            # zipfile decodes each entry's name as it reads the directory: a name flagged UTF-8
            # that is not was a 500 on every upload surface (and a mail retried for days).
            pass
        raise Unsupported("a zip archive that is not a Word document (.docx)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unsupported("not a PDF, Word document or UTF-8 text file") from exc
    if "\x00" in text:
        raise Unsupported("binary content (NUL bytes) in what looks like text")
    stripped = text.lstrip()
    if stripped.startswith("WEBVTT"):
        return "vtt"
    if _SRT_START.match(stripped[:1024]):
        return "srt"
    lowered = stripped[:1024].lower()
    if lowered.startswith(("<!doctype html", "<html")) or "<body" in lowered or "<head" in lowered:
        return "html"
    if filename.lower().endswith((".md", ".markdown")) or re.search(r"^#{1,6} \S", text, re.M):
        return "markdown"
    return "text"


def _check_length(text: str) -> str:
    if len(text) > limits()["MAX_CHARS"]:
        raise ConversionFailed(f"the text is longer than {limits()['MAX_CHARS']:,} characters")
    return text


def _pdf(data: bytes) -> Converted:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PdfReadError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ConversionFailed("the PDF is encrypted: export an unprotected copy and upload that")
        if len(reader.pages) > limits()["MAX_PAGES"]:
            raise ConversionFailed(f"the PDF has {len(reader.pages):,} pages; the limit is {limits()['MAX_PAGES']:,}")
        parts: list[str] = []
        total = 0
        for page in reader.pages:
            chunk = page.extract_text() or ""
            total += len(chunk)
            if total > limits()["MAX_CHARS"]:
                raise ConversionFailed(f"the text is longer than {limits()['MAX_CHARS']:,} characters")
            parts.append(chunk)
        return Converted("\n\n".join(parts).strip(), "pypdf", version("pypdf"), pages=len(reader.pages))
    except ConversionFailed:
        raise
    except LimitReachedError as exc:
        # pypdf's own guard: a page tree whose nodes point at one child twice counts pages
        # without end. Trying again fails the same way, so not "the extractor crashed".
        raise ConversionFailed("the PDF's page tree is damaged or names too many pages") from exc
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ConversionFailed("the PDF could not be read (it may be damaged or not really a PDF)") from exc


def _docx(data: bytes) -> Converted:
    from lxml import etree

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        expanded = sum(info.file_size for info in archive.infolist())
        if expanded > limits()["MAX_EXPANDED_BYTES"] or expanded > limits()["MAX_RATIO"] * max(len(data), 1):
            raise ConversionFailed("the document expands to far more than its size (a zip bomb?): refused")
        try:
            text = docx_text(archive, limits()["MAX_CHARS"])
        except TooLong:
            raise ConversionFailed(f"the text is longer than {limits()['MAX_CHARS']:,} characters") from None
        except (etree.XMLSyntaxError, KeyError, ValueError, *ARCHIVE_ERRORS) as exc:
            raise ConversionFailed("the Word document could not be read (it may be damaged)") from exc
    return Converted(_check_length(text), "brain-docx", DOCX_VERSION)


def _html(text: str) -> Converted:
    return Converted(_check_length(html_text(text)), "brain-html", HTML_VERSION)


# webvtt-py builds every cue and line as objects before any length is checked: 900,000 tiny
# cues (24 MB) took 33 s and ~820 MB, 12 million one-character lines ~650 MB. A day of speech is
# ~86,000 cues at one a second; a transcript's lines are a few per cue.
MAX_VTT_CUES = 100_000
MAX_VTT_LINES = 500_000


def _vtt(text: str) -> Converted:
    import webvtt

    if text.count("-->") > MAX_VTT_CUES:
        raise ConversionFailed(f"the WebVTT transcript has more than {MAX_VTT_CUES:,} cues")
    if text.count("\n") > MAX_VTT_LINES:
        raise ConversionFailed(f"the WebVTT transcript has more than {MAX_VTT_LINES:,} lines")
    try:
        captions = webvtt.from_buffer(io.StringIO(text))
    except Exception as exc:  # webvtt raises its own MalformedFileError and others
        raise ConversionFailed("the WebVTT transcript could not be read") from exc
    lines = [f"[{caption.start}] {caption.text}".strip() for caption in captions.captions]
    return Converted(_check_length("\n".join(lines)), "webvtt-py", version("webvtt-py"))


_SRT_TIMING = re.compile(
    r"(\d{1,3}):(\d{2}):(\d{2})[,.](\d{1,3})[ \t]*-->[ \t]*\d{1,3}:\d{2}:\d{2}[,.]\d{1,3}(?:[ \t].*)?"
)
SRT_VERSION = "1"


def _srt(text: str) -> Converted:
    """SubRip cues, read line by line in linear time.

    The ``srt`` package's parser is one regex over the whole file that backtracks
    cubically on a long run of digits (a 50 KB file held a worker for its whole time
    limit), so cues are read here: blocks separated by blank lines, an optional index line,
    a timing line of bounded length, then the text.
    """
    lines: list[str] = []
    block: list[str] = []
    for raw in [*text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), ""]:
        if raw.strip():
            block.append(raw.rstrip())
            continue
        if block:
            cue = _srt_cue(block)
            if cue is not None:
                lines.append(cue)
            block = []
    if not lines:
        raise ConversionFailed("the SRT transcript could not be read: no cue with a timing line was found")
    return Converted(_check_length("\n".join(lines)), "brain-srt", SRT_VERSION)


def _srt_cue(block: list[str]) -> str | None:
    index = 1 if block[0].strip().isdigit() and len(block) > 1 else 0
    timing = block[index].strip()
    match = _SRT_TIMING.fullmatch(timing) if len(timing) <= 80 else None
    if match is None:
        return None
    hours, minutes, seconds, millis = (int(part) for part in match.groups())
    start = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds, milliseconds=millis)
    return f"[{start}] {chr(10).join(block[index + 1 :])}".strip()


class _OverBudget(BaseException):
    """Raised by the CPU timer. A BaseException: converters (pypdf) catch ``Exception``."""


@contextmanager
def cpu_budget(seconds: int) -> Iterator[None]:
    """Stop the work inside after ``seconds`` of CPU time (``ConversionFailed``).

    One document must not hold a worker: a CPU-time timer (``ITIMER_VIRTUAL``) raises in
    the converter's Python code. Signals reach only the main thread, which is where Celery's
    prefork workers and the ingest command run; elsewhere the work runs unbudgeted (the
    Celery time limit still applies).
    """
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def over(_signum: int, _frame: object) -> None:
        raise _OverBudget

    previous = signal.signal(signal.SIGVTALRM, over)
    # Fires again every half second of CPU after the budget, should one raise be swallowed.
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds, 0.5)
    try:
        yield
    except _OverBudget:
        raise ConversionFailed(f"the document needed more than {seconds} s of processing: refused") from None
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def convert(kind: str, data: bytes) -> Converted:
    """Text of a document of ``kind`` (from ``sniff``) within the CPU budget; raises ``ConversionFailed``."""
    with cpu_budget(int(limits().get("CPU_SECONDS", 60))):
        converted = _convert(kind, data)
    if not converted.text.strip():
        # "Done, 0 characters" would leave a capture nobody can find or cite, and no clue why.
        hint = NO_TEXT_HINTS.get(kind, "")
        raise ConversionFailed(f"no text was found in the file{hint}")
    return converted


NO_TEXT_HINTS = {
    "pdf": " (a scanned PDF holds only images: run it through OCR first)",
    "vtt": " (no cue with readable timings and text)",
    "srt": " (no cue with readable timings and text)",
    "html": " (the page has no visible text)",
}


def _convert(kind: str, data: bytes) -> Converted:
    if kind == "pdf":
        return _pdf(data)
    if kind == "docx":
        return _docx(data)
    text = data.decode("utf-8-sig")
    if kind == "html":
        return _html(text)
    if kind == "vtt":
        return _vtt(text)
    if kind == "srt":
        return _srt(text)
    return Converted(_check_length(text.replace("\r\n", "\n").strip()), "utf-8", "1")
