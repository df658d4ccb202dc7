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
from collections import Counter
from collections.abc import Sequence
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
# difflib's longest-match search visits every (old, new) pair of positions holding equal
# elements, once per level of its recursion: repeated lines (the blank line between every
# paragraph) or repeated words made that quadratic per level — a review of 2,000 edited
# paragraphs took 174 s, one hostile 2,000-character line pair 20 s. Past these many pairs the
# most repeated elements are junk (they never start a match, only extend one; see _matcher).
LINE_PAIR_BUDGET = 20_000
WORD_PAIR_BUDGET = 4_000
# Each longest-match search also walks its whole range of old lines, and lines reordered
# (old 0 1 2 3 …, new 1 3 5 … 0 2 4 …) made it search about once per line: 16,000 such lines
# took 36 s. Past this many lines walked, what is left unsearched shows as replaced lines.
LINE_SEARCH_BUDGET = 2_000_000

# A word or a punctuation mark with the whitespace before it: one token. Whitespace on its own
# (one token in every two of prose) was the most repeated element of every line, so the pair
# budget made it junk, no match could run past a word, and difflib searched each line once per
# word: 50 edited 2,000-character lines took 1.9 s of a review page (now 0.03 s).
_WORDS = re.compile(r"\s*\w+|\s*[^\w\s]|\s+", re.UNICODE)

Kind = Literal["context", "add", "del", "gap"]
Opcode = tuple[str, int, int, int, int]


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


def _matcher(old: Sequence[str], new: Sequence[str], budget: int) -> difflib.SequenceMatcher[str]:
    """A matcher of ``old`` against ``new`` whose search costs at most ``budget`` equal pairs a level.

    Elements are made junk, most-paired first, until the pairs of the rest fit: a junk element
    never anchors a match but still joins the matches beside it, so blank lines between edited
    paragraphs read as unchanged where they sit next to unchanged text.
    """
    in_new = Counter(new)
    pairs = {element: count * in_new[element] for element, count in Counter(old).items() if element in in_new}
    total = sum(pairs.values())
    junk: set[str] = set()
    for element, count in sorted(pairs.items(), key=lambda item: (-item[1], item[0])):
        if total <= budget:
            break
        junk.add(element)
        total -= count
    return difflib.SequenceMatcher(junk.__contains__ if junk else None, old, new, autojunk=False)


def _match_within(matcher: difflib.SequenceMatcher[str], old: Sequence[str], new: Sequence[str], budget: int) -> None:
    """Compute the matching blocks of ``matcher`` (of ``old`` against ``new``) as difflib does,
    walking at most ``budget`` lines of ``old`` across its searches; a range left unsearched reads as replaced. Sets the
    blocks difflib's opcodes then read (``matching_blocks``, its own cache)."""
    queue, blocks = [(0, len(old), 0, len(new))], []
    while queue:
        old_low, old_high, new_low, new_high = queue.pop()
        budget -= old_high - old_low
        if budget < 0:
            continue
        i, j, size = matcher.find_longest_match(old_low, old_high, new_low, new_high)
        if size:
            blocks.append((i, j, size))
            if old_low < i and new_low < j:
                queue.append((old_low, i, new_low, j))
            if i + size < old_high and j + size < new_high:
                queue.append((i + size, old_high, j + size, new_high))
    blocks.sort()
    joined: list[tuple[int, int, int]] = []
    for i, j, size in blocks:  # adjacent blocks as one, as difflib leaves them
        if joined and joined[-1][0] + joined[-1][2] == i and joined[-1][1] + joined[-1][2] == j:
            joined[-1] = (joined[-1][0], joined[-1][1], joined[-1][2] + size)
        else:
            joined.append((i, j, size))
    joined.append((len(old), len(new), 0))
    matcher.matching_blocks = [difflib.Match(*block) for block in joined]  # type: ignore[attr-defined]


def _word_pair(old: str, new: str) -> tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]:
    if len(old) > WORD_DIFF_MAX_LINE_CHARS or len(new) > WORD_DIFF_MAX_LINE_CHARS:
        return ((old, True),), ((new, True),)
    old_words, new_words = _WORDS.findall(old), _WORDS.findall(new)
    matcher = _matcher(old_words, new_words, WORD_PAIR_BUDGET)
    if matcher.ratio() < WORD_DIFF_MIN_SIMILARITY:  # a rewritten line reads better whole than as confetti
        return ((old, True),), ((new, True),)
    old_segments: list[tuple[str, bool]] = []
    new_segments: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            _segment(old_segments, "".join(old_words[i1:i2]), tag != "equal")
        if j2 > j1:
            _segment(new_segments, "".join(new_words[j1:j2]), tag != "equal")
    return tuple(old_segments), tuple(new_segments)


def _segment(segments: list[tuple[str, bool]], text: str, changed: bool) -> None:
    """Append ``text``; a changed one's leading whitespace (its tokens carry the space before
    them) is shown unchanged, so only the words are marked."""
    words = text.lstrip() if changed else text
    if len(words) < len(text):
        segments.append((text[: len(text) - len(words)], False))
    if words:
        segments.append((words, changed))


def line_diff(old: list[str], new: list[str], *, context: int = CONTEXT_LINES) -> Diff:
    """Rows of the diff from ``old`` to ``new`` with ``context`` unchanged lines around changes.

    A new text (``old`` empty) is one block of added lines; identical texts give no rows.
    """
    diff = Diff()
    matcher = _matcher(old, new, LINE_PAIR_BUDGET)
    _match_within(matcher, old, new, LINE_SEARCH_BUDGET)
    previous_end = 0
    for group in matcher.get_grouped_opcodes(context):
        first_old = group[0][1]
        if first_old > previous_end:
            diff.lines.append(DiffLine("gap", None, None, skipped=first_old - previous_end))
        for tag, i1, i2, j1, j2 in group:
            for part in _refined(tag, old, new, i1, i2, j1, j2):
                _append_rows(diff, old, new, *part)
        previous_end = group[-1][2]
    if diff.lines and previous_end < len(old):
        diff.lines.append(DiffLine("gap", None, None, skipped=len(old) - previous_end))
    return diff


def _refined(tag: str, old: Sequence[str], new: Sequence[str], i1: int, i2: int, j1: int, j2: int) -> list[Opcode]:
    """``tag``'s block, a replaced one matched again on its own when that is cheap.

    Lines made junk for the whole text (``_matcher``) never anchor a match: the blank line
    between two edited paragraphs read as removed and added. Inside one replaced block, small
    enough to match exactly, it is unchanged again.
    """
    if tag != "replace" or (i2 - i1) * (j2 - j1) > LINE_PAIR_BUDGET:
        return [(tag, i1, i2, j1, j2)]
    inner = difflib.SequenceMatcher(None, old[i1:i2], new[j1:j2], autojunk=False).get_opcodes()
    return [(t, i1 + a1, i1 + a2, j1 + b1, j1 + b2) for t, a1, a2, b1, b2 in inner]


def _append_rows(
    diff: Diff, old: Sequence[str], new: Sequence[str], tag: str, i1: int, i2: int, j1: int, j2: int
) -> None:
    """The rows of one opcode: context lines, or removed then added lines (word-level when paired)."""
    if tag == "equal":
        for offset in range(i2 - i1):
            diff.lines.append(DiffLine("context", i1 + offset + 1, j1 + offset + 1, ((old[i1 + offset], False),)))
        return
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
