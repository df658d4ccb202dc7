from __future__ import annotations

from corpus.chunking import chunk_id, chunk_markdown


def test_chunks_follow_headings() -> None:
    body = (
        "# Title\n\nIntro.\n\n## Ceiling\n\nUp to 12%.\n\n```\n# not a heading\n```\n\n"
        "### Detail\n\nDeep.\n\n## Empty\n"
    )
    chunks = chunk_markdown(body)
    assert [(c.heading_path, c.body) for c in chunks] == [
        ("Title", "Intro."),
        ("Title > Ceiling", "Up to 12%.\n\n```\n# not a heading\n```"),
        ("Title > Ceiling > Detail", "Deep."),
    ]


def test_setext_headings_and_preamble() -> None:
    chunks = chunk_markdown("Preamble.\n\nTitle\n=====\n\nBody.\n")
    assert [(c.heading_path, c.body) for c in chunks] == [("", "Preamble."), ("Title", "Body.")]


def test_long_sections_split_at_paragraphs() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(10)]
    chunks = chunk_markdown("## Long\n\n" + "\n\n".join(paragraphs))
    assert len(chunks) > 1
    assert all(len(c.body) <= 1200 for c in chunks)
    assert all(c.heading_path == "Long" for c in chunks)
    assert "\n\n".join(c.body for c in chunks) == "\n\n".join(p.strip() for p in paragraphs)


def test_a_long_paragraph_is_cut_at_lines_then_sentences_then_words() -> None:
    # A Word document or HTML page reads as one line a paragraph: no blank line to cut at.
    lines = [f"Paragraph {i} says " + "words " * 40 + "end." for i in range(200)]
    chunks = chunk_markdown("\n".join(lines))
    assert len(chunks) > 20
    assert all(len(c.body) <= 1200 for c in chunks)
    assert "\n".join(c.body for c in chunks) == "\n".join(line.strip() for line in lines)
    # One line of sentences, then one of a single endless word: nothing is lost, nothing too long.
    sentences = " ".join(f"Sentence {i} is short." for i in range(400))
    word = "x" * 5000
    chunks = chunk_markdown(f"## S\n\n{sentences}\n\n## W\n\n{word}\n")
    assert all(len(c.body) <= 1200 for c in chunks)
    assert " ".join(c.body for c in chunks if c.heading_path == "S") == sentences
    assert "".join(c.body for c in chunks if c.heading_path == "W") == word
    assert all(c.body.endswith(".") for c in chunks if c.heading_path == "S")  # cut at sentence ends


def test_lines_of_a_long_code_block_keep_their_indentation() -> None:
    code = "\n".join(f"def f{i}():\n    return {i}" for i in range(400))
    chunks = chunk_markdown(f"## Code\n\n```python\n{code}\n```\n")
    assert len(chunks) > 1
    assert all(len(c.body) <= 1200 for c in chunks)
    assert "\n    return 1\n" in chunks[0].body
    assert all("\nreturn" not in c.body for c in chunks)


def test_ids_are_content_addresses() -> None:
    first = chunk_markdown("## A\n\nSame text.\n")[0]
    again = chunk_markdown("# Other page\n\n## A\n\nSame text.\n")
    assert first.id == chunk_id("A", "Same text.")
    assert first.id != again[0].id  # a different heading path is a different chunk
    assert chunk_markdown("## A\n\nSame text.\n")[0].id == first.id


def test_unicode_line_separators_keep_text_under_its_own_heading() -> None:
    """str.splitlines() broke lines at U+2028, NEL and form feeds where markdown-it does not:
    text was filed under the next heading ("the alpha team" cited as "#beta-team") and a line lost."""
    body = (
        "# Teams\n\nOverview\u2028one\u2028two\x0cthree\n\n"
        "## Alpha team\n\nThe alpha team deploys on Mondays.\n\n## Beta team\n\nb\n"
    )
    chunks = {chunk.heading_path: chunk.body for chunk in chunk_markdown(body)}
    assert chunks["Teams > Alpha team"] == "The alpha team deploys on Mondays."
    assert chunks["Teams > Beta team"] == "b"
    assert chunks["Teams"] == "Overview\u2028one\u2028two\x0cthree"


def test_a_long_heading_is_not_repeated_whole_in_every_chunk_under_it() -> None:
    """A 20,000-character heading over 5,000 sections made 100 MB of chunks from 55 KB."""
    body = "# " + "w" * 20_000 + "\n" + "## a\nb\n" * 5_000
    chunks = chunk_markdown(body)
    assert sum(len(chunk.heading_path) + len(chunk.body) for chunk in chunks) < 2_000_000
    assert all(len(chunk.heading_path) <= 6 * 200 + 5 * 3 for chunk in chunks)
