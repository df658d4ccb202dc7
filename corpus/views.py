"""People's side of the corpus: search and the page reader.

Every view reads through selectors that apply the access predicate; a hidden page and a
missing page are the same 404.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from corpus.models import Page
from corpus.rendering import render_markdown
from corpus.search import SearchError, search
from corpus.selectors import page_read, page_relationships, source_get_visible
from grants.principals import principal_for_user
from mcp_api.ratelimit import limited_view


@login_required
@require_GET
@limited_view("search", methods=("GET",))
def search_page(request: HttpRequest) -> HttpResponse:
    principal = principal_for_user(request.user)
    query = request.GET.get("q", "").strip()
    filters = {name: request.GET.get(name, "").strip() or None for name in ("prefix", "type", "category")}
    context: dict[str, object] = {"query": query, "filters": filters, "response": None, "error": None}
    if query:
        try:
            context["response"] = search(principal=principal, query=query, k=20, **filters)  # type: ignore[arg-type]
        except SearchError as exc:
            context["error"] = str(exc)
    return render(request, "corpus/search.html", context, status=400 if context["error"] else 200)


@login_required
@require_GET
def page_detail(request: HttpRequest, path: str) -> HttpResponse:
    principal = principal_for_user(request.user)
    try:
        view = page_read(principal=principal, path=path)
        relationships = page_relationships(principal=principal, path=path)
    except Page.DoesNotExist:
        raise Http404("page not found") from None
    # page_read lists only the captures this reader can open.
    sources = []
    for key in view.sources:
        source = source_get_visible(principal=principal, key=key)
        sources.append({"key": key, "title": source.title, "uri": source.uri, "visible": True})
    return render(
        request,
        "corpus/page_detail.html",
        {
            "page": view,
            "body_html": render_markdown(view.body, page_path=view.path),
            "relationships": relationships,
            "sources": sources,
        },
    )
