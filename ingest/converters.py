"""Bytes to text: type sniffing by content, and one converter per type.

Libraries do the parsing (pypdf, python-docx, BeautifulSoup, webvtt-py, srt); this module
only chooses, bounds and reports. Every limit raises ``ConversionFailed`` with a reason a
person can act on, before memory is exhausted: encrypted PDFs, too many pages, archives
that expand too much (zip bombs), text past the character limit.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from importlib.metadata import version

from django.conf import settings

TYPES = ("markdown", "text", "html", "pdf", "docx", "vtt", "srt")
_SRT_START = re.compile(r"^\s*\d+\s*\r?\n\s*\d{2}:\d{2}:\d{2}[,.]\d{3}\s*-->", re.M)


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
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                if "word/document.xml" in archive.namelist():
                    return "docx"
        except zipfile.BadZipFile:
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
    if _SRT_START.match(text):
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
    from pypdf.errors import PdfReadError

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
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ConversionFailed("the PDF could not be read (it may be damaged or not really a PDF)") from exc


def _docx(data: bytes) -> Converted:
    import docx

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        expanded = sum(info.file_size for info in archive.infolist())
        if expanded > limits()["MAX_EXPANDED_BYTES"] or expanded > limits()["MAX_RATIO"] * max(len(data), 1):
            raise ConversionFailed("the document expands to far more than its size (a zip bomb?): refused")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises assorted types on damaged files
        raise ConversionFailed("the Word document could not be read (it may be damaged)") from exc
    paragraphs = [paragraph.text for paragraph in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            paragraphs.append(" | ".join(cell.text for cell in row.cells))
    return Converted(_check_length("\n".join(paragraphs).strip()), "python-docx", version("python-docx"))


def _html(text: str) -> Converted:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    lines = [line.strip() for line in soup.get_text("\n").splitlines()]
    return Converted(
        _check_length("\n".join(line for line in lines if line)), "beautifulsoup4", version("beautifulsoup4")
    )


def _vtt(text: str) -> Converted:
    import webvtt

    try:
        captions = webvtt.from_buffer(io.StringIO(text))
    except Exception as exc:  # webvtt raises its own MalformedFileError and others
        raise ConversionFailed("the WebVTT transcript could not be read") from exc
    lines = [f"[{caption.start}] {caption.text}".strip() for caption in captions.captions]
    return Converted(_check_length("\n".join(lines)), "webvtt-py", version("webvtt-py"))


def _srt(text: str) -> Converted:
    import srt

    try:
        subtitles = list(srt.parse(text))
    except srt.SRTParseError as exc:
        raise ConversionFailed("the SRT transcript could not be read") from exc
    lines = [f"[{subtitle.start}] {subtitle.content}".strip() for subtitle in subtitles]
    return Converted(_check_length("\n".join(lines)), "srt", version("srt"))


def convert(kind: str, data: bytes) -> Converted:
    """Text of a document of ``kind`` (from ``sniff``); raises ``ConversionFailed``."""
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
