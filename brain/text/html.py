"""What a reader of an HTML document sees, as text: one block a line, scripts and styles dropped.

The markup is read as a stream by libxml2's HTML parser (lxml's parser-target interface): no
tree is built, so memory follows the text rather than the element count, and the parser is
linear on malformed markup. BeautifulSoup over Python's ``html.parser``, used before, held
670 MB for a 5 MB page of 600,000 small elements, and ``html.parser`` is quadratic on some
broken markup on this Python (200 KB of ``</`` took 6.6 s, twice that 18 s).

Block elements (paragraphs, headings, list items, table cells, ``<br>``…) end a line; inline
ones do not, so "Hello <b>world</b>" reads as one line. Whitespace runs are one space, as a
browser shows them, except inside ``<pre>``, whose lines are kept. Comments, processing
instructions and the contents of ``<script>``, ``<style>``, ``<noscript>`` and ``<template>``
are not text; neither is ``<head>`` when ``drop_head`` is set.
"""

from __future__ import annotations

import io
import re

from lxml import etree

from brain.text.secrets import storable

# Whitespace a browser collapses to one space outside <pre>.
_SPACES = re.compile(r"\s+")
_BLOCK = 64 * 1024
DROPPED = frozenset({"script", "style", "noscript", "template"})
BLOCKS = frozenset(
    {
        "address", "article", "aside", "audio", "blockquote", "body", "br", "caption", "center",
        "dd", "details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html",
        "legend", "li", "main", "math", "menu", "nav", "ol", "option", "p", "pre", "section",
        "summary", "table", "tbody", "td", "textarea", "tfoot", "th", "thead", "title", "tr", "ul",
        "video",
    }
)  # fmt: skip


class _Reader:
    """An lxml parser target collecting visible text line by line."""

    def __init__(self, dropped: frozenset[str]) -> None:
        self.dropped = dropped
        self.lines: list[str] = []
        self.line: list[str] = []
        self.skipping = 0  # open dropped elements
        self.preformatted = 0  # open <pre> elements

    def start(self, tag: str, attrib: object) -> None:
        if tag in self.dropped:
            self.skipping += 1
        if tag in BLOCKS:
            self._end_line()
        if tag == "pre":
            self.preformatted += 1

    def end(self, tag: str) -> None:
        if tag in BLOCKS:
            self._end_line()
        if tag == "pre":
            self.preformatted = max(self.preformatted - 1, 0)
        if tag in self.dropped:
            self.skipping = max(self.skipping - 1, 0)

    def data(self, data: str) -> None:
        if self.skipping:
            return
        if not self.preformatted:
            self.line.append(data)
            return
        first, *rest = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.line.append(first)
        for line in rest:
            self._end_line(keep_spacing=True)
            self.line.append(line)

    def comment(self, text: str) -> None:
        pass

    def pi(self, target: str, data: str | None = None) -> None:
        pass

    def close(self) -> str:
        self._end_line()
        return "\n".join(self.lines)

    def _end_line(self, keep_spacing: bool | None = None) -> None:
        """End the line being read; inside ``<pre>`` (its last line included) its spacing stays."""
        if not self.line:
            return
        pieces, self.line = self.line, []
        if keep_spacing is None:
            keep_spacing = self.preformatted > 0
        text = "".join(pieces).rstrip() if keep_spacing else _collapsed(pieces)
        if text.strip():
            self.lines.append(text)


def _collapsed(pieces: list[str]) -> str:
    """``pieces`` joined, each whitespace run one space, none at either end.

    Block by block: ``split()`` and ``join()``, or one ``re.sub`` over the whole line, hold an
    object per word at once (a 25 MB line of words took 739 MB); a block's worth is small.
    """
    out = io.StringIO()
    after_space = True  # nothing written yet: leading whitespace is dropped
    for piece in pieces:
        for start in range(0, len(piece), _BLOCK):
            block = _SPACES.sub(" ", piece[start : start + _BLOCK])
            if after_space and block.startswith(" "):
                block = block[1:]  # a run that began in the block before
            if block:
                out.write(block)
                after_space = block.endswith(" ")
    return out.getvalue().rstrip(" ")


def html_text(html: str, *, drop_head: bool = False) -> str:
    """The visible text of ``html``, one block a line, no blank lines; "" for markup without text.

    Never raises on malformed markup: the parser recovers as a browser would.
    """
    if not html.strip():
        return ""
    # A lone surrogate (a mail part in UTF-7 can decode to one) cannot be encoded for libxml2.
    html = storable(html)
    reader = _Reader(DROPPED | {"head"} if drop_head else DROPPED)
    parser = etree.HTMLParser(target=reader, recover=True, no_network=True, remove_comments=True, remove_pis=True)
    parser.feed(html)
    result: str = parser.close()
    return result
