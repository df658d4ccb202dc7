"""Markdown → safe HTML for the page reader.

markdown-it-py with raw HTML disabled (it is escaped, never passed through) and its
default link validation (``javascript:``, ``vbscript:``, ``file:`` and most ``data:`` URLs
are refused). Relative links to other ``.md`` pages are rewritten to the reader's URLs, and
headings carry the ids that answers' citations (``page.md#heading``) point at.
"""

from __future__ import annotations

import html
import posixpath
import re
from typing import Any

from django.urls import reverse
from django.utils.text import slugify
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore

from brain.text.paths import PathError, validate_page_path
from corpus.chunking import HEADING_SEPARATOR, heading_text


def _resolve(page_path: str, href: str) -> tuple[str, str] | None:
    """(target page path, in-app URL) for a relative link to a page, or None for anything else."""
    target, _, anchor = href.partition("#")
    if not target or "://" in target or target.startswith(("mailto:", "/")) or not target.endswith(".md"):
        return None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page_path), target))
    try:
        validate_page_path(resolved)
    except PathError:
        return None
    url = reverse("corpus:page-detail", kwargs={"path": resolved})
    return resolved, (f"{url}#{anchor}" if anchor else url)


_TAG = re.compile(r"<[^>]*>")


def rendered_text(body: str, *, page_path: str) -> str:
    """The text a reader of the rendered page sees: the HTML's text, entities decoded.

    Block elements end a line, inline elements join their neighbours, as a browser shows them.
    """
    html_text = render_markdown(body, page_path=page_path, heading_ids=False)  # the text only: no ids needed
    html_text = re.sub(r"</(?:p|li|h[1-6]|td|th|tr|pre|blockquote)>|<br\s*/?>", "\n", html_text)
    return html.unescape(_TAG.sub("", html_text))


def _link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    href = token.attrGet("href") or ""
    resolved = _resolve(env["page_path"], href)
    if resolved is not None:
        target, url = resolved
        if target in env["unavailable"]:
            # No href: the reader sees the link's words, marked, and nothing to follow into a 404.
            del token.attrs["href"]
            token.attrSet("class", "unavailable")
            token.attrSet("title", "Not available to you")
        else:
            token.attrSet("href", url)
    elif "://" in href:
        token.attrSet("rel", "noopener noreferrer nofollow")
    return str(renderer.renderToken(tokens, idx, options, env))


# Ids of the page around the rendered body (base.html and the page's own view): a heading never
# takes one, or the skip link or an aria-labelledby would land on the heading instead. Build
# previews render without ids.
RESERVED_IDS = frozenset({"content", "site-nav", "graph-heading"})


def heading_slug(text: str) -> str:
    """A heading's anchor: ``slugify`` of its Markdown text, as ``corpus.chunking`` keeps it
    in a chunk's heading path and ``answers.services`` turns it into a citation's ``#anchor``.

    Only ``[a-z0-9_-]`` survives, so the id needs no escaping; a heading with no ASCII letter
    or digit has none (its citation has no anchor either, and lands on the page's top)."""
    return slugify(text.strip())


def _heading_ids(state: StateCore) -> None:
    """Give each heading the id ``heading_slug`` names, distinct within the body, and note in
    ``env["anchors"]`` the id of each heading chain ("Teams > Beta team > Notes", as
    ``corpus.chunking`` writes a chunk's heading path) for ``heading_anchors``.

    Of several headings with the same text the first takes the plain slug and the later ones
    ``-1``, ``-2``…, skipping any id another heading or the page around already holds.
    """
    if not state.env.get("heading_ids"):
        return
    headings = [
        (token, heading_slug(state.tokens[index + 1].content), heading_text(state.tokens[index + 1].content))
        for index, token in enumerate(state.tokens)
        if token.type == "heading_open" and index + 1 < len(state.tokens)
    ]
    anchors: dict[str, str] = state.env.setdefault("anchors", {})
    chain: list[tuple[int, str]] = list(state.env.get("chain_root", []))
    plain = {slug for _, slug, _ in headings}
    reserved = RESERVED_IDS | state.env.get("reserved_ids", frozenset())
    taken: set[str] = set()
    # The next number each slug tries: counting up from 1 for every repeat was quadratic
    # (16,000 "## a" headings: 33 s for a draft any suggest holder may write).
    following: dict[str, int] = {}
    for token, slug, text in headings:
        chain = [(level, name) for level, name in chain if level < int(token.tag[1])] + [(int(token.tag[1]), text)]
        if not slug:
            continue
        number = following.get(slug, 0)
        candidate = f"{slug}-{number}" if number else slug
        while candidate in taken or candidate in reserved or (number and candidate in plain):
            number += 1
            candidate = f"{slug}-{number}"
        following[slug] = number + 1
        taken.add(candidate)
        token.attrSet("id", candidate)
        anchors.setdefault(HEADING_SEPARATOR.join(name for _, name in chain), candidate)


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.add_render_rule("link_open", _link_open)
    md.core.ruler.push("heading_ids", _heading_ids)
    return md


# Built once: constructing the parser cost more than rendering a typical page. Rendering
# keeps no state in it (the page's path and links travel in ``env``), so threads may share it.
_MARKDOWN = _parser()


def page_links(body: str, *, page_path: str) -> set[str]:
    """The pages ``body`` links to, exactly the links the reader renders as page links.

    Read from the parser's tokens, so a link inside code is no link, and the same rule
    (``_resolve``: relative ``.md`` targets that are valid page paths) decides as when the
    page is shown. The page itself is left out.
    """
    targets: set[str] = set()
    for block in _MARKDOWN.parse(body):
        for token in block.children or ():
            if token.type == "link_open":
                resolved = _resolve(page_path, str(token.attrGet("href") or ""))
                if resolved is not None:
                    targets.add(resolved[0])
    targets.discard(page_path)
    return targets


def without_title_heading(body: str, title: str) -> str:
    """``body`` without a first ``# <title>`` line: the page header already shows the title as
    the one ``h1`` (two would confuse screen readers and look doubled)."""
    stripped = body.lstrip("\n")
    first, _, rest = stripped.partition("\n")
    if first.startswith("# ") and first[2:].strip() == title.strip():
        return rest
    return body


def render_markdown(
    body: str,
    *,
    page_path: str,
    unavailable: frozenset[str] = frozenset(),
    title: str | None = None,
    heading_ids: bool = True,
) -> str:
    """HTML for ``body``; raw HTML in the Markdown is shown as text.

    Links to the pages in ``unavailable`` (missing, or not readable by this reader — the
    caller never says which) are marked "not available to you" and lead nowhere (no ``href``),
    instead of to a 404.
    With ``title``, a first ``# <title>`` heading is left out (``without_title_heading``) and
    its anchor is left to the page's own ``h1`` (``page_detail.html`` gives it the same slug).
    ``heading_ids``: headings carry the ids citations point at; a caller rendering several
    bodies into one page (a build's previews) turns them off, or the ids would repeat.
    """
    return str(_MARKDOWN.render(*_prepared(body, page_path, unavailable, title, heading_ids)))


def _prepared(
    body: str, page_path: str, unavailable: frozenset[str], title: str | None, heading_ids: bool
) -> tuple[str, dict[str, Any]]:
    reserved: frozenset[str] = frozenset()
    root: list[tuple[int, str]] = []
    if title is not None:
        stripped = without_title_heading(body, title)
        if stripped is not body:  # its chunks' heading paths still begin with it
            root = [(1, heading_text(body.lstrip("\n").partition("\n")[0][2:]))]
        body = stripped
        reserved = frozenset({heading_slug(title)})
    env = {"page_path": page_path, "unavailable": unavailable, "heading_ids": heading_ids, "reserved_ids": reserved,
           "chain_root": root, "anchors": {}}  # fmt: skip
    return body, env


def heading_anchors(body: str, *, page_path: str, title: str) -> dict[str, str]:
    """The id each heading chain lands on in the page as ``page_detail`` renders it (``body``
    with ``title``): chain ("A > B", a chunk's heading path) → id, the first of equal chains.
    A chain under the page's own title heading lands on the page's ``h1`` (the title's slug).
    Citations are made from this, so an anchor always names an id the page has, and the right one.
    """
    body, env = _prepared(body, page_path, frozenset(), title, True)
    _MARKDOWN.parse(body, env)
    anchors: dict[str, str] = env["anchors"]
    if env["chain_root"] and heading_slug(title):
        anchors.setdefault(env["chain_root"][0][1], heading_slug(title))
    return anchors
