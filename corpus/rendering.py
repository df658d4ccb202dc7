"""Markdown → safe HTML for the page reader.

markdown-it-py with raw HTML disabled (it is escaped, never passed through) and its
default link validation (``javascript:``, ``vbscript:``, ``file:`` and most ``data:`` URLs
are refused). Relative links to other ``.md`` pages are rewritten to the reader's URLs.
"""

from __future__ import annotations

import html
import posixpath
import re
from typing import Any

from django.urls import reverse
from markdown_it import MarkdownIt

from brain.text.paths import PathError, validate_page_path


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
    html_text = render_markdown(body, page_path=page_path)
    html_text = re.sub(r"</(?:p|li|h[1-6]|td|th|tr|pre|blockquote)>|<br\s*/?>", "\n", html_text)
    return html.unescape(_TAG.sub("", html_text))


def _link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    href = token.attrGet("href") or ""
    resolved = _resolve(env["page_path"], href)
    if resolved is not None:
        target, url = resolved
        token.attrSet("href", url)
        if target in env["unavailable"]:
            token.attrSet("class", "unavailable")
            token.attrSet("title", "Not available to you")
    elif "://" in href:
        token.attrSet("rel", "noopener noreferrer nofollow")
    return str(renderer.renderToken(tokens, idx, options, env))


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.add_render_rule("link_open", _link_open)
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


def render_markdown(body: str, *, page_path: str, unavailable: frozenset[str] = frozenset()) -> str:
    """HTML for ``body``; raw HTML in the Markdown is shown as text.

    Links to the pages in ``unavailable`` (missing, or not readable by this reader — the
    caller never says which) are marked "not available to you" instead of leading to a 404.
    """
    return str(_MARKDOWN.render(body, {"page_path": page_path, "unavailable": unavailable}))
