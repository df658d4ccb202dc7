"""Line diffs stay readable on ordinary edits and bounded on repetitive text."""

from __future__ import annotations

from corpus.diffs import LINE_PAIR_BUDGET, WORD_PAIR_BUDGET, _matcher, _word_pair, line_diff


def searched_pairs(old: list[str], new: list[str], budget: int) -> int:
    """The equal (old, new) position pairs difflib's longest-match search visits at one level."""
    matcher = _matcher(old, new, budget)
    return sum(len(matcher.b2j.get(element, ())) for element in old)


def paragraphs(count: int, edit: set[int]) -> list[str]:
    lines: list[str] = []
    for number in range(count):
        day = "Friday" if number in edit else "Thursday"
        lines += [f"Paragraph {number}: the team meets on {day} about topic {number}.", ""]
    return lines


def test_repeated_lines_and_words_never_cost_more_than_the_budget() -> None:
    """Every blank line paired with every other (2,000 paragraphs: 4 million pairs, searched
    again at each level of difflib's recursion) took a review page 174 s."""
    old, new = paragraphs(2000, set()), paragraphs(2000, set(range(2000)))
    assert searched_pairs(old, new, LINE_PAIR_BUDGET) <= LINE_PAIR_BUDGET
    words_old, words_new = ["a", " "] * 1000, ["a", " ", "b", " "] * 500
    assert searched_pairs(words_old, words_new, WORD_PAIR_BUDGET) <= WORD_PAIR_BUDGET
    hostile = _word_pair(("a " * 1000)[:2000], ("a b " * 500)[:2000])
    assert hostile == (((("a " * 1000)[:2000], True),), ((("a b " * 500)[:2000], True),))
    diff = line_diff(old, new)
    assert (diff.added, diff.removed) == (4000, 4000)  # every paragraph edited: shown whole


def test_ordinary_edits_read_as_before() -> None:
    old = paragraphs(500, set())
    scattered = line_diff(old, paragraphs(500, {7, 57, 107}))
    assert (scattered.added, scattered.removed) == (3, 3)
    # Blank lines between consecutive edited paragraphs are unchanged, not removed and re-added.
    consecutive = line_diff(old, paragraphs(500, set(range(100, 110))))
    assert (consecutive.added, consecutive.removed) == (10, 10)
    changed_words = [
        text for line in consecutive.lines if line.kind == "add" for text, changed in line.segments if changed
    ]
    assert set(changed_words) == {"Friday"}
