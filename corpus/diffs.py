"""Line diffs with word-level highlighting, for the review screen and page history.

The diff is computed on lines (``difflib``), then each replaced line is paired with its
counterpart and diffed again word by word, so a reviewer sees *which words* changed, not
just which lines. The HTML is built here with every piece of text escaped; templates mark
it safe. Large inputs stay cheap: word-level passes are skipped for long blocks and lines.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field
from typing import Literal

from django.utils.safestring import SafeString, mark_safe

# Past these sizes a block is shown as whole changed lines: word diffs there cost more
# than they help a reader, and a hostile page must not cost a request its time budget.
WORD_DIFF_MAX_BLOCK_LINES = 200
WORD_DIFF_MAX_LINE_CHARS = 2_000
CONTEXT_LINES = 3
# Lines sharing less than this share of their words are shown as wholly replaced.
WORD_DIFF_MIN_SIMILARITY = 0.4

_WORDS = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)

Kind = Literal["context", "add", "del", "gap"]


@dataclass(frozen=True)
class DiffLine:
    """One row of a diff: ``segments`` are (text, changed) pairs; a gap row counts skipped lines."""

    kind: Kind
    old_number: int | None
    new_number: int | None
    segments: tuple[tuple[str, bool], ...] = ()
    skipped: int = 0


@dataclass
class Diff:
    """A diff of two texts as rows, and how many lines were added and removed."""

    lines: list[DiffLine] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    @property
    def unchanged(self) -> bool:
        return self.added == 0 and self.removed == 0

    def html(self) -> SafeString:
        """The diff as escaped HTML rows (``.diff .line`` in brain.css)."""
        return render_diff_html(self)


def _word_pair(old: str, new: str) -> tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]:
    if len(old) > WORD_DIFF_MAX_LINE_CHARS or len(new) > WORD_DIFF_MAX_LINE_CHARS:
        return ((old, True),), ((new, True),)
    old_words, new_words = _WORDS.findall(old), _WORDS.findall(new)
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    if matcher.ratio() < WORD_DIFF_MIN_SIMILARITY:  # a rewritten line reads better whole than as confetti
        return ((old, True),), ((new, True),)
    old_segments: list[tuple[str, bool]] = []
    new_segments: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            old_segments.append(("".join(old_words[i1:i2]), tag != "equal"))
        if j2 > j1:
            new_segments.append(("".join(new_words[j1:j2]), tag != "equal"))
    return tuple(old_segments), tuple(new_segments)


def line_diff(old: list[str], new: list[str], *, context: int = CONTEXT_LINES) -> Diff:
    """Rows of the diff from ``old`` to ``new`` with ``context`` unchanged lines around changes.

    A new text (``old`` empty) is one block of added lines; identical texts give no rows.
    """
    diff = Diff()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    previous_end = 0
    for group in matcher.get_grouped_opcodes(context):
        first_old = group[0][1]
        if first_old > previous_end:
            diff.lines.append(DiffLine("gap", None, None, skipped=first_old - previous_end))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset in range(i2 - i1):
                    diff.lines.append(
                        DiffLine("context", i1 + offset + 1, j1 + offset + 1, ((old[i1 + offset], False),))
                    )
                continue
            removed, added = old[i1:i2], new[j1:j2]
            diff.removed += len(removed)
            diff.added += len(added)
            word_level = tag == "replace" and max(len(removed), len(added)) <= WORD_DIFF_MAX_BLOCK_LINES
            removed_rows: list[DiffLine] = []
            added_rows: list[DiffLine] = []
            for index in range(max(len(removed), len(added))):
                old_line = removed[index] if index < len(removed) else None
                new_line = added[index] if index < len(added) else None
                if word_level and old_line is not None and new_line is not None:
                    old_segments, new_segments = _word_pair(old_line, new_line)
                else:
                    # A line with no counterpart is marked by its row's colour alone: highlighting
                    # every word of a new page would only add noise.
                    old_segments = ((old_line, False),) if old_line is not None else ()
                    new_segments = ((new_line, False),) if new_line is not None else ()
                if old_line is not None:
                    removed_rows.append(DiffLine("del", i1 + index + 1, None, old_segments))
                if new_line is not None:
                    added_rows.append(DiffLine("add", None, j1 + index + 1, new_segments))
            diff.lines.extend(removed_rows)
            diff.lines.extend(added_rows)
        previous_end = group[-1][2]
    if diff.lines and previous_end < len(old):
        diff.lines.append(DiffLine("gap", None, None, skipped=len(old) - previous_end))
    return diff


_SIGN = {"context": " ", "add": "+", "del": "−"}
_LABEL = {"add": "added", "del": "removed"}


def render_diff_html(diff: Diff) -> SafeString:
    """Escaped HTML for ``diff``: one ``div.line`` per row, changed words in ``ins``/``del``.

    Each changed row carries a visually hidden "added"/"removed" word so the change is not
    conveyed by colour alone (screen readers, colour-blind readers).
    """
    parts: list[str] = ['<div class="diff">']
    for line in diff.lines:
        if line.kind == "gap":
            parts.append(
                f'<div class="gap"><span>⋯ {line.skipped} unchanged line{"s" if line.skipped != 1 else ""}</span></div>'
            )
            continue
        number = line.new_number if line.kind == "add" else line.old_number
        tag = {"add": "ins", "del": "del"}.get(line.kind)
        text: list[str] = []
        for segment, changed in line.segments:
            escaped = html.escape(segment)
            text.append(f"<{tag}>{escaped}</{tag}>" if changed and tag else escaped)
        label = f'<span class="visually-hidden">{_LABEL[line.kind]}: </span>' if line.kind in _LABEL else ""
        parts.append(
            f'<div class="line {line.kind}"><span class="num">{number or ""}</span>'
            f'<span class="sign" aria-hidden="true">{_SIGN[line.kind]}</span>'
            f"<span>{label}{''.join(text) or ' '}</span></div>"
        )
    parts.append("</div>")
    return mark_safe("".join(parts))  # noqa: S308 — every text piece above went through html.escape
