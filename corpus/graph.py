"""A small picture of a page's relationships: pages linking in on the left, out on the right.

Drawn as inline SVG on the server (no script, nothing fetched): every title is escaped and
every node is a link. Only pages the reader can see are ever passed in.
"""

from __future__ import annotations

import html

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

MAX_PER_SIDE = 6
WIDTH, NODE_W, NODE_H, GAP = 640, 190, 30, 10


def _label(title: str, limit: int = 26) -> str:
    return title if len(title) <= limit else title[: limit - 1] + "…"


def _node(x: int, y: int, path: str, title: str, css: str = "") -> str:
    url = html.escape(reverse("corpus:page-detail", kwargs={"path": path}), quote=True)
    return (
        f'<a href="{url}"><g class="{css}"><title>{html.escape(title)} ({html.escape(path)})</title>'
        f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
        f'<text x="{x + 8}" y="{y + 19}">{html.escape(_label(title))}</text></g></a>'
    )


def relationship_graph(
    *, path: str, title: str, incoming: list[dict[str, str]], outgoing: list[dict[str, str]]
) -> SafeString | None:
    """SVG of ``incoming`` → page → ``outgoing`` (each ``{"path", "title"}``), or None when both are empty."""
    if not incoming and not outgoing:
        return None
    left, right = incoming[:MAX_PER_SIDE], outgoing[:MAX_PER_SIDE]
    rows = max(len(left), len(right), 1)
    height = rows * (NODE_H + GAP) + GAP
    centre_y = (height - NODE_H) // 2
    centre_x = (WIDTH - NODE_W) // 2
    summary = f"Relationships of {title}: {len(incoming)} linking in, {len(outgoing)} linked to"
    # No role="img": the nodes are links, and an image may not contain interactive content.
    parts = [
        f'<svg class="graph" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">'
        f"<title>{html.escape(summary)}</title>"
    ]
    for side, items, x in (("in", left, 0), ("out", right, WIDTH - NODE_W)):
        offset = (height - len(items) * (NODE_H + GAP) + GAP) // 2
        for index, item in enumerate(items):
            y = offset + index * (NODE_H + GAP)
            x1, x2 = (x + NODE_W, centre_x) if side == "in" else (centre_x + NODE_W, x)
            parts.append(f'<line x1="{x1}" y1="{y + NODE_H // 2}" x2="{x2}" y2="{centre_y + NODE_H // 2}"/>')
            parts.append(_node(x, y, item["path"], item["title"]))
    parts.append(_node(centre_x, centre_y, path, title, "node-self"))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 — titles and paths are escaped in _node
