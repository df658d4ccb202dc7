"""The browse tree: the paths a reader can see, folded into folders with page counts.

One query reads every visible page's path and facets (the access predicate inside it);
the tree and the filter choices are built from those rows in Python. Nothing about a
page the reader cannot see — not even a folder name — ever enters the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corpus.models import Page
from grants.principals import Principal

FILTERS = ("type", "category", "owner", "status")


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


def page_tree(*, principal: Principal | None, filters: dict[str, str | None], prefix: str = "") -> Tree:
    """The tree of live pages ``principal`` may read, narrowed by ``filters`` and a path ``prefix``.

    ``choices`` lists every value of each filter among the visible pages (before filtering),
    so a filter can always be widened again.
    """
    rows = list(
        Page.objects.visible_to(principal, "read")
        .filter(path__startswith=prefix)
        .order_by("path")
        .values_list("path", "title", "type", "status", "category", "owner__user__username", "as_of")
    )
    choices: dict[str, set[str]] = {name: set() for name in FILTERS}
    root = Folder(name="", path="")
    total = 0
    for path, title, type_, status, category, owner, as_of in rows:
        facets = {"type": type_, "status": status, "category": category or "", "owner": owner}
        for name in FILTERS:
            if facets[name]:
                choices[name].add(facets[name])
        if any(value and facets[name] != value for name, value in filters.items()):
            continue
        total += 1
        folder = root
        root.count += 1
        *folders, name = path.split("/")
        walked = ""
        for part in folders:
            walked += part + "/"
            folder = folder.folders.setdefault(part, Folder(name=part, path=walked))
            folder.count += 1
        folder.pages.append(PageEntry(path, name, title, type_, status, owner, as_of))
    return Tree(root=root, choices={name: sorted(values) for name, values in choices.items()}, total=total)
