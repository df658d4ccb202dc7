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


def test_a_long_edited_line_is_matched_in_runs_and_marks_only_the_changed_words() -> None:
    """Whitespace was a token of its own: half of every line, made junk by the pair budget, so
    no match ran past one word and difflib searched the line once per word (50 edited lines of
    2,000 characters cost a review page 1.9 s). A word now carries the space before it."""
    import random
    import re

    from corpus import diffs

    rng = random.Random(5)
    vocabulary = ["the", "team", "on", "a", "of", *(f"term{number}" for number in range(150))]
    line = " ".join(rng.choice(vocabulary) for _ in range(240)) + " after review today"
    edited = line.replace(" review ", " careful review ", 1)
    old_words, new_words = diffs._WORDS.findall(line), diffs._WORDS.findall(edited)
    matcher = _matcher(old_words, new_words, WORD_PAIR_BUDGET)
    junk_share = sum(1 for word in old_words if matcher.bjunk and word in matcher.bjunk) / len(old_words)
    assert junk_share < 0.1, junk_share  # whitespace alone was every second token, all of it junk
    old_segments, new_segments = _word_pair(line, edited)
    changed = [text for text, flagged in new_segments if flagged]
    assert len(line) < 2_000  # within the word pass
    assert changed == ["careful"]
    assert not any(flagged and re.match(r"\s", text) for text, flagged in (*old_segments, *new_segments))
    assert "".join(text for text, _ in new_segments) == edited


def test_reordered_lines_walk_at_most_the_search_budget_and_read_as_difflib_reads_them() -> None:
    """Each longest-match search walks its whole range of old lines: lines reordered (the odd
    ones first, then the even ones) made difflib search once per line — 16,000 such lines cost
    a review page 36 s. Past the budget the rest shows as replaced; within it, difflib's own."""
    import difflib
    import random

    from corpus import diffs

    walked: list[int] = []
    real = difflib.SequenceMatcher.find_longest_match

    def counted(self: difflib.SequenceMatcher[str], alo: int = 0, ahi: int | None = None, *rest: int) -> object:
        walked.append((len(self.a) if ahi is None else ahi) - alo)
        return real(self, alo, ahi, *rest)  # type: ignore[arg-type]

    old = [f"line {number}" for number in range(16_000)]
    new = old[1::2] + old[0::2]
    original = difflib.SequenceMatcher.find_longest_match
    difflib.SequenceMatcher.find_longest_match = counted  # type: ignore[method-assign,assignment]
    try:
        diff = line_diff(old, new)
    finally:
        difflib.SequenceMatcher.find_longest_match = original  # type: ignore[method-assign]
    assert sum(walked) <= diffs.LINE_SEARCH_BUDGET + len(old)
    assert diff.added == diff.removed  # every line is either kept or shown as moved
    rng = random.Random(11)
    for _ in range(500):
        before = [rng.choice("abcdef") for _ in range(rng.randint(0, 40))]
        after = [rng.choice("abcdef") for _ in range(rng.randint(0, 40))]
        reference = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        matcher = diffs._matcher(before, after, LINE_PAIR_BUDGET)
        diffs._match_within(matcher, before, after, diffs.LINE_SEARCH_BUDGET)
        assert matcher.get_opcodes() == reference
