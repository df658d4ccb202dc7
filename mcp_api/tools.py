"""The one MCP tool catalogue. Every tool is defined once; who sees it is a projection.

A tool names the credential kinds that may use it (``person``: an OAuth token of a
member; ``build``: a build credential) and, for people, the OAuth scopes it needs.
``tools_for(caller)`` is the projection used by both ``tools/list`` and ``tools/call``:
a tool outside it is answered exactly like a tool that does not exist.

Handlers validate input with their pydantic model, call selectors and services, and
return a pydantic output model; ``structuredContent`` is its JSON dump, so it conforms
to the advertised output schema by construction.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import Q
from pydantic import BaseModel, Field

from builds.models import Build, BuildChange
from builds.selectors import build_diff, build_summary
from builds.services import (
    branch_capture_keys,
    build_delete_page,
    build_link_pages,
    build_move_page,
    build_record_capture,
    build_record_figure,
    build_submit,
    build_write_page,
)
from corpus.frontmatter import PageInvalid
from corpus.models import Source
from corpus.search import search
from corpus.selectors import (
    figure_current,
    frontmatter_as_seen_by,
    page_find,
    page_read,
    page_relationships,
    source_get_visible,
    source_list_visible,
    source_search,
)
from corpus.services import page_validate, source_tag
from mcp_api.answer_tools import ANSWER_TOOLS
from mcp_api.base import BUILD, PERSON, QUESTION, SCOPE_CORPUS_READ, SCOPE_MEMORY, Args, Caller, Out, Tool
from mcp_api.memory_tools import MEMORY_TOOLS

__all__ = [
    "BUILD",
    "CATALOGUE",
    "PERSON",
    "QUESTION",
    "SCOPE_CORPUS_READ",
    "SCOPE_MEMORY",
    "Args",
    "Caller",
    "Out",
    "Tool",
]


# --------------------------------------------------------------------------- read tools


class FindPageArgs(Args):
    prefix: str | None = Field(None, description="Path prefix, e.g. 'topics/pricing/'")
    words: str | None = Field(None, description="Words that must appear in the title")
    type: str | None = None
    category: str | None = None
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


class PageOut(Out):
    path: str
    title: str
    type: str
    owner: str
    status: str
    change_policy: str
    category: str | None
    sensitivity: str
    as_of: str
    sources: list[str]
    related: list[str]
    body: str
    revision_sha256: str
    promoted_by: str | None
    promoted_at: str | None


def read_page(caller: Caller, args: PathArgs) -> PageOut:
    return PageOut(**page_read(principal=caller.principal, path=args.path).__dict__)


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


# --------------------------------------------------------------------------- branch tools


class NoArgs(Args):
    pass


class BranchOut(Out):
    id: str
    title: str
    status: str
    changes: list[dict[str, str]]
    captures: list[str]
    figures: list[str]
    blockers: list[str]


def _build(caller: Caller) -> Build:
    assert caller.build is not None  # branch tools are projected to build credentials only
    return Build.objects.get(pk=caller.build.pk)


def read_branch(caller: Caller, args: NoArgs) -> BranchOut:
    summary = build_summary(build=_build(caller), viewer=caller.principal)
    return BranchOut.model_validate({key: summary[key] for key in BranchOut.model_fields})


class DraftOut(Out):
    path: str
    action: str
    frontmatter: dict[str, Any]
    body: str


def read_draft(caller: Caller, args: PathArgs) -> DraftOut:
    # A moved page is found at its old path and at its new one.
    change = (
        BuildChange.objects.select_related("revision")
        .filter(build=_build(caller))
        .filter(Q(path=args.path) | Q(new_path=args.path, action=BuildChange.Action.MOVE))
        .first()
    )
    if change is None:
        raise BuildChange.DoesNotExist(f"no draft of {args.path} on this branch")
    revision = change.revision
    return DraftOut(
        path=change.path, action=change.action,
        frontmatter=frontmatter_as_seen_by(revision.frontmatter, caller.principal) if revision else {},
        body=revision.body if revision else "",
    )  # fmt: skip


class WriteArgs(Args):
    path: str
    markdown: str = Field(description="The whole page: YAML frontmatter between '---' lines, then Markdown")


class WrittenOut(Out):
    path: str
    action: str


def write_page(caller: Caller, args: WriteArgs) -> WrittenOut:
    change = build_write_page(build=_build(caller), path=args.path, markdown=args.markdown)
    return WrittenOut(path=change.path, action=change.action)


def delete_page(caller: Caller, args: PathArgs) -> WrittenOut:
    change = build_delete_page(build=_build(caller), path=args.path)
    return WrittenOut(path=change.path, action=change.action)


class MoveArgs(Args):
    path: str
    new_path: str


def move_page(caller: Caller, args: MoveArgs) -> WrittenOut:
    change = build_move_page(build=_build(caller), path=args.path, new_path=args.new_path)
    return WrittenOut(path=change.path, action=change.action)


class CaptureArgs(Args):
    key: str
    kind: str = Field(description="document | ticket | interview | web | note")
    title: str
    text: str = ""
    uri: str = ""
    category: str | None = None
    sensitivity: str = "ordinary"
    tags: list[str] = Field(default_factory=list, max_length=64)


class KeyOut(Out):
    key: str


def record_capture(caller: Caller, args: CaptureArgs) -> KeyOut:
    capture = build_record_capture(build=_build(caller), **args.model_dump())
    return KeyOut(key=f"capture:{capture.source.key}")


class FigureRecordArgs(Args):
    page_path: str
    key: str
    value: str = Field(description="A decimal number, e.g. '12' or '0.125'")
    unit: str = ""
    as_of: dt.date
    source_key: str | None = None


def record_figure(caller: Caller, args: FigureRecordArgs) -> KeyOut:
    recorded = build_record_figure(build=_build(caller), **args.model_dump())
    return KeyOut(key=recorded.figure.key if recorded.figure is not None else args.key)


class LinkArgs(Args):
    path: str
    target: str


def link_pages(caller: Caller, args: LinkArgs) -> WrittenOut:
    change = build_link_pages(build=_build(caller), path=args.path, target=args.target)
    return WrittenOut(path=change.path, action=change.action)


def unlink_pages(caller: Caller, args: LinkArgs) -> WrittenOut:
    change = build_link_pages(build=_build(caller), path=args.path, target=args.target, link=False)
    return WrittenOut(path=change.path, action=change.action)


class DiffOut(Out):
    path: str
    diff: list[str]


def diff_page(caller: Caller, args: PathArgs) -> DiffOut:
    for item in build_diff(build=_build(caller), viewer=caller.principal):
        if item["path"] == args.path:
            return DiffOut(path=args.path, diff=list(item["diff"]))  # type: ignore[call-overload]
    raise BuildChange.DoesNotExist(f"no draft of {args.path} on this branch")


class ValidateOut(Out):
    valid: bool
    problems: list[str]


def validate_page(caller: Caller, args: WriteArgs) -> ValidateOut:
    try:
        page_validate(actor=caller.principal, path=args.path, markdown=args.markdown,
                      branch_sources=branch_capture_keys(_build(caller)))  # fmt: skip
    except PageInvalid as invalid:
        return ValidateOut(valid=False, problems=[str(problem) for problem in invalid.problems])
    return ValidateOut(valid=True, problems=[])


class StatusOut(Out):
    status: str


def submit_for_review(caller: Caller, args: NoArgs) -> StatusOut:
    build = build_submit(actor=caller.principal, build=_build(caller))
    return StatusOut(status=build.status)


# --------------------------------------------------------------------------- the catalogue

_BRANCH = frozenset({BUILD})

CATALOGUE: tuple[Tool, ...] = (
    Tool("find_page", "Find live pages you can see by path prefix, title words, type or category.", FindPageArgs, PageList, find_page),
    Tool("read_page", "Read a live page: its frontmatter and Markdown body.", PathArgs, PageOut, read_page),
    Tool("search", "Hybrid semantic + keyword search over the pages you can see.", SearchArgs, SearchOut, search_tool, rate_class="search"),
    Tool("read_figure", "The current value of a tracked figure.", FigureArgs, FigureOut, read_figure),
    Tool("page_relationships", "Pages a page links to, is linked from, and is related to.", PathArgs, RelationshipsOut, relationships),
    Tool("list_sources", "List captures (source documents) you can see.", ListSourcesArgs, SourceList, list_sources),
    Tool("search_sources", "Full-text search over captures you can see.", SearchSourcesArgs, SourceList, search_sources, rate_class="search"),
    Tool("read_source", "Read a capture's text and metadata.", SourceArgs, SourceOut, read_source),
    Tool("tag_source", "Add or remove tags on a capture (needs suggest on it).", TagArgs, TagsOut, tag_source, read_only=False),
    Tool("read_branch", "This build's changes, captures, figures and status.", NoArgs, BranchOut, read_branch, kinds=_BRANCH),
    Tool("read_draft", "Read this build's draft of a page.", PathArgs, DraftOut, read_draft, kinds=_BRANCH),
    Tool("write_page", "Write a draft of a page (full Markdown with frontmatter) on this build.", WriteArgs, WrittenOut, write_page, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("delete_page", "Propose deleting a live page.", PathArgs, WrittenOut, delete_page, read_only=False, kinds=_BRANCH),
    Tool("move_page", "Propose moving a live page to a new path.", MoveArgs, WrittenOut, move_page, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("record_capture", "Record a capture (source) on this build.", CaptureArgs, KeyOut, record_capture, read_only=False, kinds=_BRANCH),
    Tool("record_figure", "Record a figure value on a live page, on this build.", FigureRecordArgs, KeyOut, record_figure, read_only=False, kinds=_BRANCH),
    Tool("link_pages", "Add a page to another page's related list (as a draft).", LinkArgs, WrittenOut, link_pages, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("unlink_pages", "Remove a page from another page's related list (as a draft).", LinkArgs, WrittenOut, unlink_pages, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("diff_page", "Unified diff of this build's draft of a page against the live page.", PathArgs, DiffOut, diff_page, kinds=_BRANCH),
    Tool("validate_page", "Check a page (path + Markdown) without writing it.", WriteArgs, ValidateOut, validate_page, kinds=_BRANCH),
    Tool("submit_for_review", "Submit this build for review by a person.", NoArgs, StatusOut, submit_for_review, read_only=False, kinds=_BRANCH),
    *MEMORY_TOOLS,
    *ANSWER_TOOLS,
)  # fmt: skip

_BY_NAME = {tool.name: tool for tool in CATALOGUE}


def tools_for(caller: Caller) -> list[Tool]:
    """The projection of the catalogue for ``caller`` (used by list *and* call)."""
    visible = []
    for tool in CATALOGUE:
        if caller.kind not in tool.kinds:
            continue
        if caller.kind == PERSON and not (tool.scopes & caller.scopes):
            continue
        visible.append(tool)
    return visible


def tool_for(caller: Caller, name: str) -> Tool | None:
    """The tool ``name`` if ``caller`` may use it; None exactly as for a name that does not exist."""
    tool = _BY_NAME.get(name)
    return tool if tool is not None and tool in tools_for(caller) else None
