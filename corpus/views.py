"""People's side of the corpus: browse, search and the page reader.

Every view reads through selectors that apply the access predicate; a hidden page and a
missing page are the same 404 ("not available to you").
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from corpus.browse import FILTERS, FULL_TREE_LIMIT, page_tree
from corpus.graph import relationship_graph
from corpus.models import Page, Source
from corpus.rendering import render_markdown
from corpus.search import SearchError, search
from corpus.search_results import group_by_page
from corpus.selectors import page_figures, page_get_visible, page_links, page_view_of, reverify_days, source_get_visible
from grants.decorators import limited_view
from grants.principals import principal_for_user


@login_required
@require_GET
@limited_view("search", methods=("GET",))
def search_page(request: HttpRequest) -> HttpResponse:
    principal = principal_for_user(request.user)
    query = request.GET.get("q", "").strip()
    filters = {name: request.GET.get(name, "").strip() or None for name in ("prefix", "type", "category")}
    context: dict[str, object] = {"query": query, "filters": filters, "groups": None, "error": None}
    if query:
        try:
            response = search(principal=principal, query=query, k=30, **filters)  # type: ignore[arg-type]
        except SearchError as exc:
            context["error"] = str(exc)
        else:
            context["groups"] = group_by_page(response.results)
            context["degraded"] = response.degraded
    return render(request, "corpus/search.html", context, status=400 if context["error"] else 200)


@login_required
@require_GET
def browse(request: HttpRequest) -> HttpResponse:
    """The tree of pages the reader can see, filterable by type, category, owner and status."""
    principal = principal_for_user(request.user)
    filters = {name: request.GET.get(name, "").strip() or None for name in FILTERS}
    prefix = request.GET.get("prefix", "").strip()
    tree = page_tree(principal=principal, filters=filters, prefix=prefix)
    filtered = any(filters.values()) or bool(prefix)
    by_folder = tree.total > FULL_TREE_LIMIT
    if by_folder:
        tree_html = tree.folder_html(prefix=prefix, filters=filters, all_pages=request.GET.get("all") == "1")
    else:
        # Small trees and filtered ones open fully; a larger one opens its first level only.
        tree_html = tree.html(open_all=filtered or tree.total <= 60)
    folder_path = tree.folder_at(prefix).path if by_folder or prefix else ""
    parent_path = folder_path.rstrip("/").rpartition("/")[0]
    kept = {name: value for name, value in filters.items() if value}
    return render(
        request,
        "corpus/browse.html",
        {
            "tree": tree,
            "tree_html": tree_html,
            "by_folder": by_folder,
            "folder_path": folder_path,
            "parent_query": urlencode({**kept, "prefix": parent_path + "/"} if parent_path else kept),
            "filters": filters,
            "prefix": prefix,
        },
    )


def page_unavailable(request: HttpRequest) -> HttpResponse:
    """The answer for a page that is missing or that the reader may not read: the same for both."""
    return render(request, "corpus/page_unavailable.html", {"path": request.path}, status=404)


# Pages linking here that a page's web page names (and its graph draws); the rest are counted.
LINKED_FROM_SHOWN = 50


@login_required
@require_GET
def page_detail(request: HttpRequest, path: str) -> HttpResponse:
    principal = principal_for_user(request.user)
    try:
        page = page_get_visible(principal=principal, path=path)
    except Page.DoesNotExist:
        return page_unavailable(request)
    view = page_view_of(page, principal)
    links = page_links(principal=principal, page=page, linked_from_limit=LINKED_FROM_SHOWN)
    # page_view_of lists only the captures this reader can open.
    sources: list[Source] = []
    for key in view.sources:
        try:
            sources.append(source_get_visible(principal=principal, key=key))
        except Source.DoesNotExist:  # went out of reach between the two reads
            continue
    outgoing = links.links_to + [item for item in links.related if item not in links.links_to]
    due_in = reverify_days(view.type) - (timezone.localdate() - page.as_of).days
    return render(
        request,
        "corpus/page_detail.html",
        {
            "page": view,
            "body_html": render_markdown(
                view.body, page_path=view.path, unavailable=links.unavailable, title=view.title
            ),
            "relationships": links,
            "graph": relationship_graph(
                path=view.path, title=view.title, incoming=links.linked_from, outgoing=outgoing
            ),
            "sources": sources,
            "figures": page_figures(page=page, principal=principal),
            "due_in": due_in,
        },
    )
