"""Heading ids: distinct, stable, and where answers' citations land."""

from __future__ import annotations

import re

from corpus.rendering import render_markdown


def ids(html: str) -> list[str]:
    return re.findall(r'<h[1-6] id="([^"]+)"', html)


def test_repeated_headings_take_the_next_free_number() -> None:
    """Each repeat once counted up from 1 again (quadratic: 16,000 "## a" took 33 s of a draft
    write; bench/hostile.py measures it); the next number is now remembered per heading."""
    assert ids(render_markdown("## a\n## a\n## a-1\n## a\n", page_path="topics/x.md")) == ["a", "a-2", "a-1", "a-3"]
    found = ids(render_markdown("## a\n" * 2000, page_path="topics/x.md"))
    assert len(set(found)) == 2000
    assert found[-1] == "a-1999"


def test_text_rendered_for_the_write_scan_carries_no_ids() -> None:
    assert "id=" not in render_markdown("## a\n", page_path="topics/x.md", heading_ids=False)
