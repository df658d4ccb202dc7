"""Parsing and validating a page: YAML frontmatter + Markdown body.

``parse_page(path, markdown)`` returns a ``PageDocument`` or raises ``PageInvalid`` with
every problem found (not just the first), each naming the field and the rule. Checks
that need the database (the owner is a member, sources exist) are in
``check_references``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler
from pydantic import BaseModel, ConfigDict, Field

from brain.domain import DomainError
from brain.text.paths import PathError, validate_category, validate_page_path
from brain.text.plain_yaml import load_plain_yaml
from grants.models import Sensitivity
from grants.principals import Principal

REQUIRED = ("type", "owner", "status", "change_policy", "as_of")
OPTIONAL = ("title", "category", "sensitivity", "sources", "related")
STATUSES = ("draft", "review", "approved", "deprecated")
CHANGE_POLICIES = ("gate", "owner")
_TYPE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_CAPTURE_REF = re.compile(r"^capture:(.+)$")
_SOURCE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)*$")
MAX_SOURCE_ID = 200
MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_FRONTMATTER_DEPTH = 8


class _FrontmatterHandler(YAMLHandler):  # type: ignore[misc]
    """python-frontmatter's YAML handler with the plain loader and size/depth bounds."""

    def load(self, fm: str, **kwargs: object) -> Any:
        try:
            return load_plain_yaml(
                fm, max_bytes=MAX_FRONTMATTER_BYTES, max_depth=MAX_FRONTMATTER_DEPTH, what="frontmatter",
                plain_keys=True,
            )  # fmt: skip
        except (yaml.composer.ComposerError, yaml.constructor.ConstructorError) as exc:
            # Anchors, aliases and keys that are not plain, said for frontmatter.
            raise yaml.composer.ComposerError(None, None, f"{exc.problem} in frontmatter", exc.problem_mark) from None


@dataclass(frozen=True)
class Problem:
    """One reason a page is invalid: the field (or ``path``/``body``) and the rule broken."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class PageInvalid(DomainError, ValueError):
    """A page failed validation; ``problems`` lists every rule it breaks."""

    code = "page_invalid"

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(problem) for problem in problems))

    @property
    def safe_message(self) -> str:
        return "The page is not valid: " + "; ".join(str(problem) for problem in self.problems)


class PageDocument(BaseModel):
    """A validated page, ready to become a revision: the one page-document model.

    ``parse_page`` makes it from Markdown (validation), ``corpus.services.document_from_revision``
    from a stored revision (promotion, review), and the MCP/REST ``validate_page`` answer
    carries it, so all three read a page the same way (the title rule included: ``page_title``).
    """

    model_config = ConfigDict(frozen=True)

    path: str
    frontmatter: dict[str, Any]
    body: str
    title: str
    type: str
    owner: str
    status: str
    change_policy: str
    as_of: dt.date
    category: str | None
    sensitivity: int
    sources: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)


EARLIEST_AS_OF = dt.date(1900, 1, 1)


def _as_date(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return None
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return None
    return None


def page_title(given: object, body: str, path: str) -> str:
    """A page's title, one rule for validation and promotion: the frontmatter's ``title``, else
    the first ``# `` heading, else the file name ("discount-policy.md" → "Discount policy")."""
    if isinstance(given, str) and given.strip():
        return given.strip()
    return _title_from(body, path).strip()


def _title_from(body: str, path: str) -> str:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    return stem.replace("-", " ").replace("_", " ").strip().capitalize() or path


def validate_source_id(source_id: object) -> str:
    """A capture id such as ``gdrive/2026-01-15-northwind-msa``: canonical segments, ≤ 200 chars."""
    if not isinstance(source_id, str) or len(source_id) > MAX_SOURCE_ID or not _SOURCE_ID.fullmatch(source_id):
        raise ValueError("a capture id is lower-case a-z, 0-9, '.', '-', '_' segments joined by '/' (≤ 200 chars)")
    if any(segment in {".", ".."} for segment in source_id.split("/")):
        raise ValueError("a capture id must not contain '.' or '..' segments")
    if source_id == "search" or (source_id.rsplit("/", 1)[-1] in RESERVED_SOURCE_ENDINGS and "/" in source_id):
        # REST v1 reads /sources/search, /sources/<key>/status and /sources/<key>/tags: such a
        # capture could never be read there by its own key (another capture's status answered).
        raise ValueError("a capture id must not be 'search' nor end in '/status' or '/tags' (REST v1 routes)")
    return source_id


RESERVED_SOURCE_ENDINGS = frozenset({"status", "tags"})


_FRONTMATTER_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:")


def markdown_field_at(markdown: str, line: int) -> str:
    """The field a line of a page file belongs to: ``frontmatter <key>`` or ``body``.

    Used to name the field of a refusal ("frontmatter title, line 4"); reads the lines
    only, so it also works on a page whose YAML would not parse.
    """
    lines = markdown.splitlines()
    if not lines or lines[0].strip() != "---":
        return "body"
    key = "frontmatter"
    for number, text in enumerate(lines[1:], start=2):
        if text.strip() in ("---", "..."):
            return key if line < number else "body"
        match = _FRONTMATTER_KEY.match(text)
        if match:
            key = f"frontmatter {match.group(1)}"
        if number == line:
            return key
    return key


def frontmatter_text(markdown: str) -> str:
    """The frontmatter block of ``markdown`` as written (between the ``---`` fences), or ``""``."""
    try:
        written, _ = _FrontmatterHandler().split(markdown)
    except ValueError:  # no frontmatter block
        return ""
    return str(written).strip("\n")


_HEADING_LINE = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
# A code fence opens with three or more backticks or tildes (up to three spaces in) and closes
# with at least as many of the same character (CommonMark); "#" lines inside are code.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _heading_count(markdown: str) -> int:
    """The ATX headings outside code fences, counted line by line in one pass: the chunker's
    sections (``corpus.chunking`` reads with markdown-it, where a shell comment in a fenced
    block is no heading), without parsing a page that may be too big to parse."""
    count = 0
    fence = ""  # the open fence's marker, "" outside code
    for line in markdown.splitlines():
        marker = _FENCE.match(line)
        run = marker.group(1) if marker else ""
        rest = line[marker.end() :] if marker else ""
        if fence:
            if run[:1] == fence[0] and len(run) >= len(fence) and not rest.strip():
                fence = ""
        elif run and not (run[0] == "`" and "`" in rest):  # a backtick fence's info has no backtick
            fence = run
        elif _HEADING_LINE.match(line):
            count += 1
    return count


def _size_problem(markdown: str) -> Problem | None:
    """Too long, or cut into too many sections: each section becomes a chunk, embedded when
    the page is written (``BRAIN_PAGE_MAX_CHARS``, ``BRAIN_PAGE_MAX_HEADINGS``)."""
    from django.conf import settings

    most = int(settings.BRAIN_PAGE_MAX_CHARS)
    if len(markdown) > most:
        return Problem("body", f"the page is {len(markdown):,} characters; a page holds at most {most:,} "
                               "(split it into several pages)")  # fmt: skip
    headings = _heading_count(markdown)
    most = int(settings.BRAIN_PAGE_MAX_HEADINGS)
    if headings > most:
        return Problem("body", f"the page has {headings:,} headings; a page holds at most {most:,} "
                               "(split it into several pages)")  # fmt: skip
    return None


def parse_page(path: str, markdown: str) -> PageDocument:
    """Parse and validate everything that needs no database. Raises ``PageInvalid``."""
    problems: list[Problem] = []
    try:
        validate_page_path(path)
    except PathError as exc:
        problems.append(Problem("path", f"{exc.message} (rule: {exc.rule})"))
    if "\x00" in markdown:
        raise PageInvalid([*problems, Problem("body", "content contains a NUL character")])
    size_problem = _size_problem(markdown)
    if size_problem is not None:  # before anything reads it further
        raise PageInvalid([*problems, size_problem])
    try:
        post = frontmatter.loads(markdown, handler=_FrontmatterHandler())
    except (yaml.YAMLError, ValueError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        reason = getattr(exc, "problem", None) if isinstance(exc, yaml.composer.ComposerError) else None
        if isinstance(exc, ValueError) and not isinstance(exc, yaml.YAMLError):
            reason = str(exc)
        message = f"is refused: {reason}{where}" if reason else f"is not valid YAML{where}"
        raise PageInvalid([*problems, Problem("frontmatter", message)]) from None
    meta: dict[str, Any] = dict(post.metadata)
    if not meta:
        problems.append(Problem("frontmatter", "is missing: a page starts with a '---' YAML block"))
    for key in sorted(set(meta) - set(REQUIRED) - set(OPTIONAL)):
        problems.append(Problem(str(key), "is not a known frontmatter key"))
    for key in REQUIRED:
        if meta.get(key) in (None, ""):
            problems.append(Problem(key, "is required"))

    page_type = meta.get("type")
    if page_type not in (None, "") and (not isinstance(page_type, str) or not _TYPE.fullmatch(page_type)):
        problems.append(Problem("type", "must be a lower-case word (a-z, 0-9, '-', '_'; ≤ 32 chars)"))
    owner = meta.get("owner")
    if owner not in (None, "") and not isinstance(owner, str):
        problems.append(Problem("owner", "must be a member's username"))
    status = meta.get("status")
    if status not in (None, "") and status not in STATUSES:
        problems.append(Problem("status", f"must be one of {', '.join(STATUSES)}"))
    policy = meta.get("change_policy")
    if policy not in (None, "") and policy not in CHANGE_POLICIES:
        problems.append(Problem("change_policy", "must be 'gate' (anyone with approve) or 'owner' (only the owner)"))
    as_of = _as_date(meta.get("as_of"))
    if meta.get("as_of") not in (None, "") and as_of is None:
        problems.append(Problem("as_of", "must be an ISO date (YYYY-MM-DD)"))
    elif as_of is not None and not EARLIEST_AS_OF <= as_of <= dt.date.today() + dt.timedelta(days=1):
        # The day the page's facts were checked: never ahead (9999-12-31 made a page never
        # due for re-verification), a day of slack for the zones ahead of the server's.
        problems.append(Problem("as_of", f"must be a date from {EARLIEST_AS_OF} to today"))

    category = meta.get("category")
    if category is not None:
        try:
            validate_category(category)
        except PathError as exc:
            problems.append(Problem("category", exc.message))
    sensitivity_name = meta.get("sensitivity", "ordinary")
    try:
        sensitivity = int(Sensitivity.from_name(str(sensitivity_name)))
    except ValueError:
        problems.append(Problem("sensitivity", "must be one of ordinary, restricted, secret"))
        sensitivity = int(Sensitivity.ORDINARY)

    sources: list[str] = []
    raw_sources = meta.get("sources", [])
    if not isinstance(raw_sources, list):
        problems.append(Problem("sources", "must be a list of 'capture:<id>' references"))
        raw_sources = []
    for ref in raw_sources:
        match = _CAPTURE_REF.match(ref) if isinstance(ref, str) else None
        if match is None:
            problems.append(Problem("sources", f"entry {ref!s:.60} is not a 'capture:<id>' reference"))
            continue
        try:
            sources.append(validate_source_id(match.group(1)))
        except ValueError as exc:
            problems.append(Problem("sources", str(exc)))

    related: list[str] = []
    raw_related = meta.get("related", [])
    if not isinstance(raw_related, list):
        problems.append(Problem("related", "must be a list of page paths"))
        raw_related = []
    for target in raw_related:
        try:
            related.append(validate_page_path(target))
        except PathError as exc:
            problems.append(Problem("related", f"{str(target)[:60]!r}: {exc.message}"))

    title = meta.get("title")
    if title is not None and (not isinstance(title, str) or not title.strip() or len(title) > 200):
        problems.append(Problem("title", "must be a non-empty string of at most 200 characters"))
    if not post.content.strip():
        problems.append(Problem("body", "is empty"))
    if problems:
        raise PageInvalid(problems)

    normalised = {key: meta[key] for key in (*REQUIRED, *OPTIONAL) if key in meta}
    normalised["as_of"] = as_of.isoformat() if as_of else None
    return PageDocument(
        path=path,
        frontmatter=normalised,
        body=post.content,
        title=page_title(title, post.content, path),
        type=str(page_type),
        owner=str(owner),
        status=str(status),
        change_policy=str(policy),
        as_of=as_of or dt.date.today(),
        category=category,
        sensitivity=sensitivity,
        sources=sources,
        related=related,
    )


def check_references(
    document: PageDocument,
    *,
    principal: Principal | None,
    branch_sources: frozenset[str] = frozenset(),
    carried: frozenset[str] = frozenset(),
) -> list[Problem]:
    """Database checks: the owner is an active member; every cited capture exists.

    A capture ``principal`` may not read is reported exactly like a missing one — unless it
    is ``carried``: a citation the server itself carried over from the page's own text (a
    link, a section or a move derived from the page; an import identical to the live page),
    so nothing is lost on promotion. Never because the live page happens to cite it: the
    author's own text naming a hidden key would then be accepted where a missing key is
    refused, telling them what the page cites.
    ``branch_sources``: captures recorded on the same build (drafts until it is promoted,
    which makes them live together with the page citing them).
    """
    from corpus.models import Source
    from grants.models import Member

    problems: list[Problem] = []
    if not Member.objects.filter(user__username=document.owner, is_active=True).exists():
        problems.append(Problem("owner", f"{document.owner!r} is not an active member"))
    visible = Source.objects.visible_to(principal, "read").filter(key__in=document.sources)
    known = set(visible.values_list("key", flat=True)) | (branch_sources & set(document.sources))
    unknown = [source_id for source_id in document.sources if source_id not in known]
    if unknown:
        live_keys = set(
            Source.objects.filter(key__in=carried & set(unknown), is_live=True).values_list("key", flat=True)
        )
        for source_id in unknown:
            if source_id not in live_keys:
                problems.append(Problem("sources", f"capture:{source_id} does not exist"))
    return problems
