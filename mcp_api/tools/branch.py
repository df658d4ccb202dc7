"""MCP tools of a build credential: read and draft on the build's branch, then submit it.

Nothing here reaches the live corpus: a person reviews and promotes the build.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import Q
from pydantic import Field

from builds.models import Build, BuildChange
from builds.selectors import build_diff, build_summary, readable_changes
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
from corpus.frontmatter import PageDocument, PageInvalid
from corpus.selectors import (
    frontmatter_as_seen_by,
)
from corpus.services import page_validate
from mcp_api.base import BUILD, Args, Caller, Out, Tool
from mcp_api.tools.corpus import PathArgs


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
    build = _build(caller)
    # Read under the requester's grants as they are now (diff_page does the same): a draft
    # copied from a page they have since lost is not theirs to read any more.
    if change is None or change.pk not in readable_changes(caller.principal, build):
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
        if args.path in (item["path"], item["new_path"]):  # a move is found by either of its paths
            return DiffOut(path=args.path, diff=list(item["diff"]))  # type: ignore[call-overload]
    raise BuildChange.DoesNotExist(f"no draft of {args.path} on this branch")


class ValidateOut(Out):
    valid: bool
    problems: list[str]
    # The page as it would be written (the same model validation and promotion use); null when invalid.
    document: PageDocument | None = None


def validate_page(caller: Caller, args: WriteArgs) -> ValidateOut:
    try:
        document = page_validate(actor=caller.principal, path=args.path, markdown=args.markdown,
                                 branch_sources=branch_capture_keys(_build(caller)))  # fmt: skip
    except PageInvalid as invalid:
        return ValidateOut(valid=False, problems=[str(problem) for problem in invalid.problems])
    return ValidateOut(valid=True, problems=[], document=document)


class StatusOut(Out):
    status: str


def submit_for_review(caller: Caller, args: NoArgs) -> StatusOut:
    build = build_submit(actor=caller.principal, build=_build(caller))
    return StatusOut(status=build.status)


_BRANCH = frozenset({BUILD})

BRANCH_TOOLS: tuple[Tool, ...] = (
    Tool("read_branch", "This build's changes, captures, figures and status.", NoArgs, BranchOut, read_branch, kinds=_BRANCH),
    Tool("read_draft", "Read this build's draft of a page.", PathArgs, DraftOut, read_draft, kinds=_BRANCH),
    Tool("write_page", "Write a draft of a page (full Markdown with frontmatter) on this build.", WriteArgs, WrittenOut, write_page, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("delete_page", "Propose deleting a live page.", PathArgs, WrittenOut, delete_page, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("move_page", "Propose moving a live page to a new path.", MoveArgs, WrittenOut, move_page, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("record_capture", "Record a capture (source) on this build.", CaptureArgs, KeyOut, record_capture, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("record_figure", "Record a figure value on a live page, on this build.", FigureRecordArgs, KeyOut, record_figure, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("link_pages", "Add a page to another page's related list (as a draft).", LinkArgs, WrittenOut, link_pages, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("unlink_pages", "Remove a page from another page's related list (as a draft).", LinkArgs, WrittenOut, unlink_pages, read_only=False, kinds=_BRANCH, rate_class="write"),
    Tool("diff_page", "Unified diff of this build's draft of a page against the live page.", PathArgs, DiffOut, diff_page, kinds=_BRANCH),
    Tool("validate_page", "Check a page (path + Markdown) without writing it.", WriteArgs, ValidateOut, validate_page, kinds=_BRANCH),
    Tool("submit_for_review", "Submit this build for review by a person.", NoArgs, StatusOut, submit_for_review, read_only=False, kinds=_BRANCH, rate_class="write"),
)  # fmt: skip
