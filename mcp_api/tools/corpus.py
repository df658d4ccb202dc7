"""MCP tools over the live corpus: pages, search, figures, relationships and captures.

Each reads through the corpus selectors under the caller's own grants (not permitted =
not found); ``tag_source`` is the one write (it needs ``suggest`` on the capture).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from brain.callers import PERSON, SCOPE_SOURCES_WRITE
from corpus.models import Source
from corpus.search import search
from corpus.selectors import (
    PageView,
    figure_current,
    page_find,
    page_read,
    page_relationships,
    source_get_visible,
    source_list_visible,
    source_search,
)
from corpus.sources import source_tag
from mcp_api.base import Args, Caller, Out, Tool


class FindPageArgs(Args):
    prefix: str | None = Field(None, max_length=255, description="Path prefix, e.g. 'topics/pricing/'")
    # A title holds at most 200 characters: more words than that cannot all be in one.
    words: str | None = Field(None, max_length=200, description="Words that must appear in the title")
    type: str | None = Field(None, max_length=64)
    category: str | None = Field(None, max_length=64)
    limit: int = Field(20, ge=1, le=200)


class PageRef(BaseModel):
    path: str
    title: str
    type: str
    category: str | None
    owner: str
    status: str
    as_of: str


class PageList(Out):
    pages: list[PageRef]


def find_page(caller: Caller, args: FindPageArgs) -> PageList:
    pages = page_find(
        principal=caller.principal, prefix=args.prefix, words=args.words, type=args.type,
        category=args.category, limit=args.limit,
    )  # fmt: skip
    return PageList(
        pages=[
            PageRef(path=p.path, title=p.title, type=p.type, category=p.category, owner=p.owner.username,
                    status=p.status, as_of=p.as_of.isoformat())
            for p in pages
        ]
    )  # fmt: skip


class PathArgs(Args):
    path: str = Field(description="Canonical page path, e.g. 'topics/pricing/discount-policy.md'")


class PageOut(Out, PageView):
    """``read_page``'s output: exactly the corpus's ``PageView``."""


def read_page(caller: Caller, args: PathArgs) -> PageOut:
    return PageOut(**page_read(principal=caller.principal, path=args.path).model_dump())


class SearchArgs(Args):
    query: str = Field(min_length=1, max_length=1000)
    k: int = Field(10, ge=1, le=50)
    prefix: str | None = None
    type: str | None = None
    category: str | None = None


class SearchHit(BaseModel):
    path: str
    title: str
    heading_path: str
    snippet: str
    score: float
    semantic_rank: int | None
    lexical_rank: int | None


class SearchOut(Out):
    results: list[SearchHit]
    degraded: bool


def search_tool(caller: Caller, args: SearchArgs) -> SearchOut:
    response = search(
        principal=caller.principal, query=args.query, k=args.k, prefix=args.prefix, type=args.type,
        category=args.category,
    )  # fmt: skip
    return SearchOut(
        results=[
            SearchHit(path=r.path, title=r.title, heading_path=r.heading_path, snippet=r.snippet, score=r.score,
                      semantic_rank=r.semantic_rank, lexical_rank=r.lexical_rank)
            for r in response.results
        ],
        degraded=response.degraded,
    )  # fmt: skip


class FigureArgs(Args):
    key: str


class FigureOut(Out):
    key: str
    value: str
    unit: str
    as_of: str
    page: str
    source: str | None


def read_figure(caller: Caller, args: FigureArgs) -> FigureOut:
    figure = figure_current(principal=caller.principal, key=args.key)
    # The capture behind the value is named only when the reader may read it.
    source = figure.source
    cited = source is not None and Source.objects.visible_to(caller.principal, "read").filter(pk=source.pk).exists()
    return FigureOut(
        key=figure.key, value=format(figure.value.normalize(), "f"), unit=figure.unit, as_of=figure.as_of.isoformat(),
        page=figure.page.path, source=f"capture:{source.key}" if cited and source is not None else None,
    )  # fmt: skip


class Link(BaseModel):
    path: str
    title: str


class RelationshipsOut(Out):
    links_to: list[Link]
    linked_from: list[Link]
    related: list[Link]


def relationships(caller: Caller, args: PathArgs) -> RelationshipsOut:
    return RelationshipsOut.model_validate(page_relationships(principal=caller.principal, path=args.path))


class ListSourcesArgs(Args):
    prefix: str | None = None
    kind: str | None = None
    tag: str | None = None
    limit: int = Field(20, ge=1, le=200)


class SourceRef(BaseModel):
    key: str
    kind: str
    title: str
    category: str | None
    tags: list[str]
    captured_at: str


class SourceList(Out):
    sources: list[SourceRef]


def _source_refs(sources: Any) -> SourceList:
    return SourceList(
        sources=[
            SourceRef(key=s.key, kind=s.kind, title=s.title, category=s.category, tags=list(s.tags),
                      captured_at=s.captured_at.isoformat())
            for s in sources
        ]
    )  # fmt: skip


def list_sources(caller: Caller, args: ListSourcesArgs) -> SourceList:
    return _source_refs(
        source_list_visible(
            principal=caller.principal, prefix=args.prefix, kind=args.kind, tag=args.tag, limit=args.limit
        )
    )


class SearchSourcesArgs(Args):
    query: str = Field(min_length=1, max_length=1000)
    limit: int = Field(20, ge=1, le=100)


def search_sources(caller: Caller, args: SearchSourcesArgs) -> SourceList:
    return _source_refs(source_search(principal=caller.principal, query=args.query, limit=args.limit))


class SourceArgs(Args):
    key: str = Field(description="Capture id, e.g. 'gdrive/2026-01-15-northwind-msa'")


class SourceOut(Out):
    key: str
    kind: str
    title: str
    text: str
    uri: str
    tags: list[str]
    captured_at: str


def read_source(caller: Caller, args: SourceArgs) -> SourceOut:
    s = source_get_visible(principal=caller.principal, key=args.key)
    return SourceOut(key=s.key, kind=s.kind, title=s.title, text=s.text, uri=s.uri, tags=list(s.tags),
                     captured_at=s.captured_at.isoformat())  # fmt: skip


class TagArgs(Args):
    key: str
    add: list[str] = Field(default_factory=list, max_length=64)
    remove: list[str] = Field(default_factory=list, max_length=64)


class TagsOut(Out):
    key: str
    tags: list[str]


def tag_source(caller: Caller, args: TagArgs) -> TagsOut:
    source = source_tag(actor=caller.principal, key=args.key, add=args.add, remove=args.remove)
    return TagsOut(key=source.key, tags=list(source.tags))


CORPUS_TOOLS: tuple[Tool, ...] = (
    Tool("find_page", "Find live pages you can see by path prefix, title words, type or category.", FindPageArgs, PageList, find_page),
    Tool("read_page", "Read a live page: its frontmatter and Markdown body.", PathArgs, PageOut, read_page),
    Tool("search", "Hybrid semantic + keyword search over the pages you can see.", SearchArgs, SearchOut, search_tool, rate_class="search"),
    Tool("read_figure", "The current value of a tracked figure.", FigureArgs, FigureOut, read_figure),
    Tool("page_relationships", "Pages a page links to, is linked from, and is related to.", PathArgs, RelationshipsOut, relationships),
    Tool("list_sources", "List captures (source documents) you can see.", ListSourcesArgs, SourceList, list_sources),
    Tool("search_sources", "Full-text search over captures you can see.", SearchSourcesArgs, SourceList, search_sources, rate_class="search"),
    Tool("read_source", "Read a capture's text and metadata.", SourceArgs, SourceOut, read_source),
    # A write to a live capture, as REST's ``sources.write``: a person holding sources:write
    # (not a read-only token, not a build credential, whose writes wait for a review).
    Tool("tag_source", "Add or remove tags on a capture (needs suggest on it).", TagArgs, TagsOut, tag_source,
         read_only=False, kinds=frozenset({PERSON}), scopes=frozenset({SCOPE_SOURCES_WRITE}), rate_class="write"),
)  # fmt: skip
