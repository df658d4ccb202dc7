"""Readings of a text: what a person sees, with every character mapped back to the original.

The secret detector does not scan raw Markdown: a value written as HTML entities, split by
emphasis markers or a zero-width character, or wrapped over two lines is invisible to a
pattern but plain to a reader. A ``Reading`` is the text after such transformations, with
``starts``/``ends`` giving, for each of its characters, the span of the original text it
came from — so a finding in a reading masks the right characters of the original.

Transformations are regex substitutions applied in sequence; each replacement character
maps to the whole span its match covered. An untouched reading keeps ``starts is None``
(the identity), so plain text pays for a few regex searches and nothing else.
"""

from __future__ import annotations

import html
import re
import unicodedata
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes


@dataclass(frozen=True)
class Reading:
    """``text`` plus, per character, the ``[starts[i], ends[i])`` span of the original."""

    text: str
    # Arrays of 32-bit integers (texts are far below 2 GB): a few MB of extracted text would
    # take ten times the memory as lists of Python ints.
    starts: array[int] | None = None
    ends: array[int] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the reading's ``[start, end)`` (``end > start``)."""
        if self.starts is None or self.ends is None:
            return start, end
        return self.starts[start], self.ends[end - 1]


def substitute(reading: Reading, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str]) -> Reading:
    """Apply ``pattern`` → ``replace(match)`` to a reading, keeping the map to the original."""
    text = reading.text
    matches = [match for match in pattern.finditer(text) if match.end() > match.start()]
    if not matches:
        return reading
    starts = reading.starts if reading.starts is not None else array("i", range(len(text)))
    ends = reading.ends if reading.ends is not None else array("i", range(1, len(text) + 1))
    pieces: list[str] = []
    new_starts: array[int] = array("i")
    new_ends: array[int] = array("i")
    cursor = 0
    for match in matches:
        begin, finish = match.span()
        pieces.append(text[cursor:begin])
        new_starts.extend(starts[cursor:begin])
        new_ends.extend(ends[cursor:begin])
        replacement = replace(match)
        if replacement:
            origin = (starts[begin], ends[finish - 1])
            pieces.append(replacement)
            new_starts.extend([origin[0]] * len(replacement))
            new_ends.extend([origin[1]] * len(replacement))
        cursor = finish
    pieces.append(text[cursor:])
    new_starts.extend(starts[cursor:])
    new_ends.extend(ends[cursor:])
    return Reading("".join(pieces), new_starts, new_ends)


# --------------------------------------------------------------------------- transformations

_ENTITY = re.compile(r"&(?:#[0-9]{1,8}|#[xX][0-9A-Fa-f]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});?")
_PERCENT_OR_PLUS = re.compile(r"(?:%[0-9A-Fa-f]{2})+|\+")


def _invisible_class() -> re.Pattern[str]:
    """Format characters (zero-width spaces and joiners, bidi controls, soft hyphen, tags…).

    Built from the Unicode database (category ``Cf``) so a newly listed control is covered
    by upgrading Python, not by editing a table. The Basic Multilingual Plane is read whole;
    of the other planes only the blocks that hold format characters (a full scan costs a
    third of a second at every start).
    """
    codes = [
        code
        for block in (range(0x10000), range(0x110BD, 0x110CE), range(0x13430, 0x13440), range(0x1BCA0, 0x1BCA4),
                      range(0x1D173, 0x1D17B), range(0xE0000, 0xE0080))
        for code in block
        if unicodedata.category(chr(code)) == "Cf"
    ]  # fmt: skip
    # Invisible but not Cf: the combining grapheme joiner, variation selectors, Hangul fillers.
    codes += [0x034F, *range(0xFE00, 0xFE10), 0x115F, 0x1160, 0x3164, 0xFFA0]
    codes.sort()
    ranges: list[str] = []
    first = previous = codes[0]
    for code in codes[1:]:
        if code != previous + 1:
            ranges.append(_range(first, previous))
            first = code
        previous = code
    ranges.append(_range(first, previous))
    return re.compile("[" + "".join(ranges) + "]+")


def _range(first: int, last: int) -> str:
    return re.escape(chr(first)) if first == last else f"{re.escape(chr(first))}-{re.escape(chr(last))}"


INVISIBLE = _invisible_class()
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# Emphasis and code markers. '*' and '`' mark up anywhere and '~~' strikes through; '_'
# only at a word's edge (CommonMark ignores intraword underscores, and tokens such as
# ``ghp_…`` or ``glpat-…_…`` contain them), and a single '~' is a character (Azure secrets).
# The closing edge is matched from a run's first underscore only ("(?<=[^\s_])"), plus the
# single last one where an opening match left it: "(?<=\S)_+" tried again from every
# underscore of a run, each scanning to its end — 20,000 underscores took 15 s per scan.
_MARKERS = re.compile(
    r"[*`]+|~~+|(?<![^\s(\[\"'])_+(?=\S)"
    r"|(?<=[^\s_])_+(?=[\s.,;:!?)\]\"']|$)|(?<=_)_(?=[\s.,;:!?)\]\"']|$)"
)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]{0,256})?/?>|<!--.{0,256}?-->")
# Line breaks with the indentation, blockquote markers and subtitle cue time stamps around
# them: where a reader's eye goes on without noticing a boundary.
_CUE_STAMP = r"(?:\[\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d{1,6})?\][ \t]*)?"
_BREAK = re.compile(r"[ \t]*(?:(?:\r\n|\r|\n|\f)[ \t]*(?:>[ \t]?)*" + _CUE_STAMP + ")+")
_PARAGRAPH = re.compile(r"(?:\r\n|\r|\n|\f)[^\r\n\f]*(?:\r\n|\r|\n|\f)")
_SPACES = re.compile(r"[ \t]{2,}")


def _unescape(match: re.Match[str]) -> str:
    return html.unescape(match.group(0))


def _unquote(match: re.Match[str]) -> str:
    if match.group(0) == "+":
        return " "  # a space in a query string
    return unquote_to_bytes(match.group(0)).decode("utf-8", "replace")


def _nfkc(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group(0))


def plain(text: str, *, url: bool = False, invisible: str = "") -> Reading:
    """Entities decoded, invisible characters removed, NFKC applied (and %XX and + decoded for URLs)."""
    reading = Reading(text)
    if url and ("%" in text or "+" in text):
        reading = substitute(reading, _PERCENT_OR_PLUS, _unquote)
    if "&" in reading.text:
        reading = substitute(reading, _ENTITY, _unescape)
    if not reading.text.isascii():
        reading = substitute(reading, INVISIBLE, lambda _match: invisible)
        if not unicodedata.is_normalized("NFKC", reading.text):
            reading = substitute(reading, _NON_ASCII, _nfkc)
    return reading


# The lookahead lets the engine skip, with one character-class test, every position where
# none of the alternatives can start (most of them).
_FLOW = re.compile(
    r"(?=[\\<*`~_ \t\r\n\f])(?:"
    + "|".join(
        f"(?P<{name}>{pattern.pattern})"
        for name, pattern in (
            ("escape", _BACKSLASH_ESCAPE),
            ("tag", _TAG),
            ("brk", _BREAK),
            ("spaces", _SPACES),
            ("marker", _MARKERS),
        )
    )
    + ")"
)


def flowing(base: Reading, *, glue: str) -> Reading:
    """What a reader takes in as one run: markup removed, line breaks read as ``glue``.

    ``glue=" "`` reads a wrapped paragraph (or subtitle cues) as one line; ``glue=""`` joins
    a value that a single line break cut in two (a blank line still reads as a space).
    Backslash escapes, HTML tags, emphasis and code markers go; runs of spaces read as one.
    One pass of one pattern: the alternatives are tried in that order at each position.
    """

    def replace(match: re.Match[str]) -> str:
        kind = match.lastgroup
        if kind == "escape":
            return match.group(0)[1:]
        if kind == "brk":
            # A blank line ends a paragraph: the eye does not join across it, so neither does glue.
            return glue if _PARAGRAPH.search(match.group(0)) is None else " "
        if kind == "spaces":
            return " "
        return ""

    return substitute(base, _FLOW, replace)
