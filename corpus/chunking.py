"""Splitting a page body into content-addressed chunks along its heading structure.

A chunk is the text under one heading (its heading path is the chain of headings above
it). Sections longer than ``max_chars`` are split at paragraph boundaries, and paragraphs
still too long at lines, sentence ends or words (``_split_long``). A chunk's id
is sha256(heading path + body), so identical prose under identical headings is the same
chunk everywhere and its embedding is computed once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

MAX_CHARS = 1200
HEADING_SEPARATOR = " > "
# Of each heading, the characters a chunk's heading path keeps: every chunk of a section
# repeats its path, so a 20,000-character heading over 5,000 sections asked for 100 MB of
# chunks from a 55 KB file (a path is at most six of these).
HEADING_TEXT_MAX = 200


def heading_text(content: str) -> str:
    """A heading as heading paths hold it (``corpus.rendering`` keys its anchors the same way)."""
    return content.strip()[:HEADING_TEXT_MAX]


# Tables on, as the reader renders (corpus.rendering): "# A | B" over "--- | ---" is a table
# there, so it must not be a heading here (its anchor would name no id).
_parser = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class ChunkText:
    """One chunk before it is stored."""

    heading_path: str
    body: str

    @property
    def id(self) -> str:
        return chunk_id(self.heading_path, self.body)

    @property
    def embedding_input(self) -> str:
        """What the model sees: the headings give a short section its context."""
        return f"{self.heading_path}\n\n{self.body}" if self.heading_path else self.body


def chunk_id(heading_path: str, body: str) -> str:
    return hashlib.sha256(f"{heading_path}\x1f{body}".encode()).hexdigest()


# Where a long section is cut, coarsest first: paragraphs, lines, sentence ends, words; and
# whether a piece keeps its indentation (a line of code or YAML means it).
_CUTS: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"\n[ \t]*\n\s*"), "\n\n", False),
    (re.compile(r"\n"), "\n", True),
    (re.compile(r"(?<=[.!?])\s+"), " ", False),
    (re.compile(r"\s+"), " ", False),
)


def _split_long(text: str, max_chars: int, level: int = 0) -> list[str]:
    """Pieces of at most ``max_chars``, cut at the coarsest boundary that makes them fit.

    Paragraphs (blank lines) first; a paragraph still too long at its lines (a Word document
    or an HTML page reads as one line a paragraph, with no blank lines: 200 paragraphs were one
    219 KB chunk, of which the embedding model sees the first few hundred words), then at
    sentence ends, then between words; a single word longer than ``max_chars`` is cut in pieces.
    """
    if len(text) <= max_chars:
        return [text]
    if level == len(_CUTS):
        return [text[start : start + max_chars] for start in range(0, len(text), max_chars)]
    pattern, joiner, indented = _CUTS[level]
    pieces: list[str] = []
    current = ""
    for part in (p.rstrip() if indented else p.strip() for p in pattern.split(text)):
        if not part.strip():
            continue
        if len(part) > max_chars:
            if current:
                pieces.append(current)
                current = ""
            pieces.extend(_split_long(part, max_chars, level + 1))
        elif current and len(current) + len(joiner) + len(part) > max_chars:
            pieces.append(current)
            current = part
        else:
            current = f"{current}{joiner}{part}" if current else part
    if current:
        pieces.append(current)
    return pieces


def chunk_markdown(body: str, *, max_chars: int = MAX_CHARS) -> list[ChunkText]:
    """Chunks of ``body`` in document order; empty sections produce none."""
    # Lines as markdown-it counts them (its token maps): "\n" after its own CR/CRLF folding.
    # str.splitlines() also breaks at U+2028, U+0085, form and vertical tab feeds, shifting
    # every later line: text was filed under the next heading, and a line lost.
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    tokens = _parser.parse(body)
    headings: list[tuple[int, int, int, str]] = []  # (first line, line after, level, text)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.map is not None:
            inline = tokens[index + 1]
            headings.append((token.map[0], token.map[1], int(token.tag[1]), heading_text(inline.content)))

    sections: list[tuple[list[str], int, int]] = []  # (heading chain, first body line, end line)
    chain: list[tuple[int, str]] = []
    previous_start = 0
    previous_chain: list[str] = []
    for first_line, after_line, level, text in headings:
        sections.append((previous_chain, previous_start, first_line))
        chain = [(lvl, t) for lvl, t in chain if lvl < level] + [(level, text)]
        previous_chain = [t for _, t in chain]
        previous_start = after_line
    sections.append((previous_chain, previous_start, len(lines)))

    chunks: list[ChunkText] = []
    for chain_texts, start, end in sections:
        text = "\n".join(lines[start:end]).strip()
        if not text:
            continue
        heading_path = HEADING_SEPARATOR.join(chain_texts)
        for piece in _split_long(text, max_chars):
            chunks.append(ChunkText(heading_path=heading_path, body=piece))
    return chunks
