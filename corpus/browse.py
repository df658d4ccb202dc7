"""The browse tree: the paths a reader can see, folded into folders with page counts.

One query reads every visible page's path and facets (the access predicate inside it), a
second names their owners;
the tree and the filter choices are built from those rows in Python. Nothing about a
page the reader cannot see — not even a folder name — ever enters the tree.

A tree of up to ``FULL_TREE_LIMIT`` pages is listed whole; a larger one folder by folder
(``Tree.folder_html``): the folders under the one asked for, as links with their counts, and
its own pages up to ``PAGES_SHOWN`` — 10,000 pages were a 2.5 MB page of closed folders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from corpus.models import Page
from grants.models import Member
from grants.principals import Principal

FILTERS = ("type", "category", "owner", "status")
FULL_TREE_LIMIT = 400
PAGES_SHOWN = 200


@dataclass
class PageEntry:
    path: str
    name: str
    title: str
    type: str
    status: str
    owner: str
    as_of: Any


@dataclass
class Folder:
    """A folder of the tree; ``count`` is every page beneath it, at any depth."""

    name: str
    path: str
    folders: dict[str, Folder] = field(default_factory=dict)
    pages: list[PageEntry] = field(default_factory=list)
    count: int = 0


@dataclass(frozen=True)
class Row:
    """One line of the flattened tree the template walks: open/close a folder, or a page."""

    kind: str  # "open" | "close" | "page"
    depth: int
    folder: Folder | None = None
    page: PageEntry | None = None


@dataclass
class Tree:
    root: Folder
    choices: dict[str, list[str]]
    total: int

    def rows(self) -> list[Row]:
        """Depth-first rows: folders first (by name), then pages (by path)."""
        rows: list[Row] = []

        def walk(folder: Folder, depth: int) -> None:
            for name in sorted(folder.folders):
                child = folder.folders[name]
                rows.append(Row("open", depth, folder=child))
                walk(child, depth + 1)
                rows.append(Row("close", depth, folder=child))
            for page in folder.pages:
                rows.append(Row("page", depth, page=page))

        walk(self.root, 0)
        return rows

    def html(self, *, open_all: bool) -> SafeString:
        """The tree as nested lists of ``<details>`` folders (escaped here, not in a template:
        a tree of a thousand pages rendered through template tags cost a quarter of a second).

        Folders open fully when ``open_all``, otherwise only the first level.
        """
        page_url = reverse("corpus:browse")  # "/pages/": a page's URL is this and its canonical path
        parts: list[str] = ["<ul>"]
        for row in self.rows():
            if row.kind == "open":
                assert row.folder is not None
                count = row.folder.count
                opened = " open" if open_all or row.depth == 0 else ""
                parts.append(
                    f"<li><details{opened}><summary><strong>{escape(row.folder.name)}/</strong> "
                    f'<span class="count">{count} page{"s" if count != 1 else ""}</span></summary><ul>'
                )
            elif row.kind == "close":
                parts.append("</ul></details></li>")
            else:
                assert row.page is not None
                parts.append(_page_item(row.page, page_url))
        parts.append("</ul>")
        return mark_safe("".join(parts))  # noqa: S308 — every value above went through escape

    def folder_at(self, prefix: str) -> Folder:
        """The deepest folder whose path ``prefix`` starts with (the root for "" or "top")."""
        folder = self.root
        for part in prefix.split("/")[:-1]:
            if part not in folder.folders:
                break
            folder = folder.folders[part]
        return folder

    def folder_html(self, *, prefix: str, filters: dict[str, str | None], all_pages: bool) -> SafeString:
        """One folder of a large tree: its folders as links (keeping the filters), then its own
        pages, the first ``PAGES_SHOWN`` unless ``all_pages``."""
        base = reverse("corpus:browse")
        kept = {name: value for name, value in filters.items() if value}
        folder = self.folder_at(prefix)

        def link(**query: str) -> str:
            return escape(base + "?" + urlencode({**kept, **query}))

        parts: list[str] = ["<ul>"]
        for name in sorted(folder.folders):
            child = folder.folders[name]
            parts.append(
                f'<li><a href="{link(prefix=child.path)}"><strong>{escape(child.name)}/</strong></a> '
                f'<span class="count">{child.count} page{"s" if child.count != 1 else ""}</span></li>'
            )
        shown = folder.pages if all_pages else folder.pages[:PAGES_SHOWN]
        parts.extend(_page_item(page, base) for page in shown)
        if len(shown) < len(folder.pages):
            more = len(folder.pages) - len(shown)
            parts.append(
                f'<li class="muted">… and {more} more page{"s" if more != 1 else ""} here. '
                f'<a href="{link(prefix=folder.path, all="1")}">List all {len(folder.pages)}</a></li>'
            )
        parts.append("</ul>")
        return mark_safe("".join(parts))  # noqa: S308 — every value above went through escape


def _page_item(page: PageEntry, base: str) -> str:
    """One page of the tree as a list item, every value escaped."""
    return (
        f'<li><a href="{escape(base + page.path)}">{escape(page.title)}</a> '
        f'<span class="muted small">{escape(page.name)} · {escape(page.type)} · {escape(page.owner)}</span></li>'
    )


def page_tree(*, principal: Principal | None, filters: dict[str, str | None], prefix: str = "") -> Tree:
    """The tree of live pages ``principal`` may read, narrowed by ``filters`` and a path ``prefix``.

    ``choices`` lists every value of each filter among the visible pages (before filtering),
    so a filter can always be widened again.
    """
    pages = Page.objects.visible_to(principal, "read")
    if prefix:
        pages = pages.filter(path__startswith=prefix)
    # Owners by id, then named from one small query: joined into the page query, a members
    # table too small for autovacuum ever to analyse drew a plan that scanned every page once
    # per member (10,000 pages, 1,000 visible: 11 ms → 6 ms).
    rows = list(pages.order_by("path").values_list("path", "title", "type", "status", "category", "owner_id", "as_of"))
    owner_names = dict(Member.objects.filter(pk__in={row[5] for row in rows}).values_list("pk", "user__username"))
    types: set[str] = set()
    statuses: set[str] = set()
    categories: set[str] = set()
    active = {name: value for name, value in filters.items() if value}
    root = Folder(name="", path="")
    folder, folder_path = root, ""
    for path, title, type_, status, category, owner_id, as_of in rows:
        owner = owner_names.get(owner_id, "")
        types.add(type_)
        statuses.add(status)
        if category:
            categories.add(category)
        if active:
            facets = {"type": type_, "status": status, "category": category or "", "owner": owner}
            if any(facets[name] != value for name, value in active.items()):
                continue
        directory, _, name = path.rpartition("/")
        if directory != folder_path:  # rows come by path, so a folder's pages mostly come together
            folder, folder_path = _folder_of(root, directory), directory
        folder.pages.append(PageEntry(path, name, title, type_, status, owner, as_of))
    _count(root)
    choices = {
        "type": sorted(value for value in types if value),
        "category": sorted(categories),
        "owner": sorted(value for value in owner_names.values() if value),
        "status": sorted(value for value in statuses if value),
    }
    return Tree(root=root, choices={name: choices[name] for name in FILTERS}, total=root.count)


def _folder_of(root: Folder, directory: str) -> Folder:
    """The folder at ``directory`` ("a/b"; "" is the root), made with its parents if new."""
    folder = root
    for part in directory.split("/") if directory else ():
        child = folder.folders.get(part)
        if child is None:
            child = folder.folders[part] = Folder(name=part, path=f"{folder.path}{part}/")
        folder = child
    return folder


def _count(folder: Folder) -> int:
    """Sets every folder's ``count`` (its pages at any depth) and returns the root's."""
    folder.count = len(folder.pages) + sum(_count(child) for child in folder.folders.values())
    return folder.count
