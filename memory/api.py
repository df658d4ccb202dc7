"""The memory REST API under ``/api/memory/``: the same service functions as MCP and the dashboard.

Authentication: ``Authorization: Bearer bmt_…`` (a personal API token, issued and revoked
by the member on the Memory tokens page) or an OAuth access token with the ``memory`` scope
bound to this API. Never a session cookie (so no CSRF surface), never a query string.
Errors: ``{"error": {"code", "message", "request_id"}}``; a memory the caller may not see
is the same 404 as one that does not exist.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils.dateparse import parse_datetime
from django.views.decorators.csrf import csrf_exempt

from brain.domain import problem_for
from brain.errors import error_body, json_error, problem_response
from brain.inputs import InputRefused, parse_json
from brain.ratelimit import RateLimited, hit, throttled
from brain.text.secrets import NulRefused, SecretRefused
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.models import Memory
from memory.recall import memory_connections, memory_get, memory_list_recent, memory_recall
from memory.services import (
    memory_append,
    memory_forget,
    memory_link,
    memory_remember,
    memory_set_status,
    memory_share,
    memory_unlink,
    memory_update,
    workspace_value,
)
from oauth.audience import legacy_refusal, member_for

EXPORT_PAGE = 500
IMPORT_MAX_LINES = 500
MAX_BODY = 5 * 1024 * 1024


def api_member(request: HttpRequest) -> Member | None:
    """The member behind the request's bearer token, if this API accepts it (``oauth.audience``)."""
    return member_for(request)


def memory_api(methods: tuple[str, ...], rate_class: str | dict[str, str] | None = None) -> Callable[..., Any]:
    """Authenticate, rate-limit, parse JSON and map domain errors for one endpoint.

    ``rate_class`` is one class, or one per method (an entry is read with GET and written —
    an embedding computed — with PATCH). By default a GET or HEAD counts as a read and any
    other method as a write (links, shares and deletes counted as reads ran at 600 a minute).
    """

    def decorate(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @csrf_exempt
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if request.method not in methods:
                refused = json_error("method_not_allowed", f"Use {' or '.join(methods)}.", 405)
                refused["Allow"] = ", ".join(methods)
                return refused
            member = api_member(request)
            if member is None:
                return legacy_refusal(request, "Send a personal API token or an OAuth token with the memory scope.")
            try:
                if rate_class is None:
                    chosen = "read" if request.method in ("GET", "HEAD") else "write"
                elif isinstance(rate_class, str):
                    chosen = rate_class
                else:
                    chosen = rate_class.get(str(request.method), "write")
                hit(principal_key=f"member:{member.pk}", rate_class=chosen)
            except RateLimited as limited:
                return throttled(request, limited, "Too many requests; retry after {seconds} seconds.", api=True)
            if len(request.body) > MAX_BODY:
                return json_error("too_large", "The request body is over 5 MB.", 413)
            try:
                return view(request, member, *args, **kwargs)
            except Exception as failure:
                problem = problem_for(failure)  # the one mapping every transport uses
                if problem is None:
                    raise
                return problem_response(request, problem, api=True)

        return wrapped

    return decorate


def _body(request: HttpRequest) -> dict[str, Any]:
    if not request.body:
        return {}
    try:
        data = parse_json(request.body)
    except InputRefused as refused:
        raise MemoryInvalid(str(refused)) from None
    if not isinstance(data, dict):
        raise MemoryInvalid("the body must be a JSON object")
    return data


def _int(value: Any, name: str, default: int) -> int:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise MemoryInvalid(f"{name} must be an integer") from exc


def _when(value: Any, name: str) -> dt.datetime | None:
    if value in (None, ""):
        return None
    try:
        # A well-formed but impossible date-time ("2024-13-45T00:00") raises rather than
        # returning None: refused by name like any other, never a 500.
        parsed = parse_datetime(str(value)) if isinstance(value, str) else None
    except ValueError as exc:
        raise MemoryInvalid(f"{name} must be an ISO date or date-time") from exc
    if parsed is None:
        try:
            parsed = dt.datetime.combine(dt.date.fromisoformat(str(value)), dt.time(), tzinfo=dt.UTC)
        except ValueError as exc:
            raise MemoryInvalid(f"{name} must be an ISO date or date-time") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def serialise(memory: Memory) -> dict[str, Any]:
    return {
        "id": str(memory.pk), "content": memory.content, "tags": memory.wire_tags, "workspace": memory.workspace,
        "author": memory.author.display_name, "status": memory.status, "importance": memory.importance,
        "kind": memory.kind, "volatility": memory.volatility, "source": memory.source,
        "recall_count": memory.recall_count, "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
    }  # fmt: skip


def export_count(member: Member) -> int:
    """How many lines ``export_lines(member)`` sends (both layers), counted as it begins."""
    return Memory.objects.filter(author=member).count()


def export_lines(member: Member, *, workspace: str | None = None) -> Iterator[str]:
    """``member``'s own memories (one layer, or both), oldest first, one JSON line each."""
    own = Memory.objects.filter(author=member).select_related("author__user").order_by("created_at", "id")
    if workspace is not None:
        own = own.filter(workspace=workspace)
    for memory in own.iterator():
        yield json.dumps(serialise(memory), ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- endpoints


@memory_api(("POST",), rate_class="write")
def capture(request: HttpRequest, member: Member) -> HttpResponse:
    data = _body(request)
    result = memory_remember(
        actor=member, content=data.get("content"),  # type: ignore[arg-type]
        tags=data.get("tags"), workspace=data.get("workspace"), source=data.get("source") or "",
        importance=data.get("importance"), kind=data.get("kind"), volatility=data.get("volatility"),
    )  # fmt: skip
    body = {
        "outcome": result.outcome, "memory": serialise(result.memory), "similarity": result.similarity,
        "duplicate_of": str(result.duplicate_of.pk) if result.duplicate_of else None,
        "links": [{"id": str(link.to_memory_id), "type": link.type} for link in result.links],
        "contradiction": result.contradiction_summary(),
    }  # fmt: skip
    return JsonResponse(body, status=200 if result.outcome == "duplicate" else 201)


@memory_api(("GET", "PATCH", "DELETE"))
def entry(request: HttpRequest, member: Member, memory_id: str) -> HttpResponse:
    if request.method == "GET":
        return JsonResponse(serialise(memory_get(actor=member, memory_id=memory_id)))
    if request.method == "DELETE":
        memory_forget(actor=member, memory_id=memory_id)
        return HttpResponse(status=204)
    data = _body(request)
    updated = memory_update(actor=member, memory_id=memory_id, content=data.get("content"), tags=data.get("tags"))
    return JsonResponse(serialise(updated))


@memory_api(("POST",), rate_class="write")
def append(request: HttpRequest, member: Member, memory_id: str) -> HttpResponse:
    return JsonResponse(serialise(memory_append(actor=member, memory_id=memory_id, text=_body(request).get("text"))))  # type: ignore[arg-type]


@memory_api(("POST",))
def status(request: HttpRequest, member: Member, memory_id: str) -> HttpResponse:
    return JsonResponse(
        serialise(memory_set_status(actor=member, memory_id=memory_id, status=str(_body(request).get("status", ""))))
    )  # type: ignore[arg-type]


@memory_api(("POST",))
def share(request: HttpRequest, member: Member, memory_id: str) -> HttpResponse:
    moved, removed = memory_share(
        actor=member, memory_id=memory_id, workspace=_body(request).get("workspace", "company")
    )
    return JsonResponse({"memory": serialise(moved), "links_removed": removed})


@memory_api(("GET",))
def connections(request: HttpRequest, member: Member, memory_id: str) -> HttpResponse:
    found = memory_connections(actor=member, memory_id=memory_id)
    return JsonResponse({"id": memory_id, "connections": [
        {"direction": direction, "type": kind, "memory": serialise(other)} for direction, kind, other in found
    ]})  # fmt: skip


@memory_api(("POST", "DELETE"))
def links(request: HttpRequest, member: Member) -> HttpResponse:
    data = _body(request)
    if request.method == "POST":
        made = memory_link(
            actor=member, from_id=data.get("from_id"), to_id=data.get("to_id"), type=data.get("type") or "relates_to"
        )
        return JsonResponse({"from_id": str(made.from_memory_id), "to_id": str(made.to_memory_id), "type": made.type,
                             "provenance": made.provenance}, status=201)  # fmt: skip
    removed = memory_unlink(actor=member, from_id=data.get("from_id"), to_id=data.get("to_id"), type=data.get("type"))
    return JsonResponse({"removed": removed})


@memory_api(("GET",))
def entries(request: HttpRequest, member: Member) -> HttpResponse:
    found = memory_list_recent(
        actor=member, n=_int(request.GET.get("n"), "n", 10), tag=request.GET.get("tag") or None,
        kind=request.GET.get("kind") or None, workspace=request.GET.get("workspace") or None,
        author=request.GET.get("actor") or None,
    )  # fmt: skip
    return JsonResponse({"memories": [serialise(memory) for memory in found]})


@memory_api(("GET",), rate_class="search")
def recall(request: HttpRequest, member: Member) -> HttpResponse:
    found = memory_recall(
        actor=member, query=request.GET.get("q", ""), top_k=_int(request.GET.get("topK"), "topK", 5),
        tag=request.GET.get("tag") or None, after=_when(request.GET.get("after"), "after"),
        before=_when(request.GET.get("before"), "before"), kind=request.GET.get("kind") or None,
        hops=_int(request.GET.get("hops"), "hops", 0), workspace=request.GET.get("workspace") or None,
    )  # fmt: skip
    return JsonResponse({
        "degraded": found.degraded,
        "results": [{**serialise(item.memory), "score": item.score, "similarity": item.similarity, "hop": item.hop}
                    for item in found.results],
    })  # fmt: skip


@memory_api(("GET",))
def count(request: HttpRequest, member: Member) -> HttpResponse:
    visible = Memory.objects.visible_to(member)
    if request.GET.get("workspace"):
        # Named like every other layer argument: an unknown one is a 400, not a count of 0.
        visible = visible.filter(workspace=workspace_value(request.GET["workspace"]))
    return JsonResponse({"count": visible.count()})


@memory_api(("GET",))
def stats(request: HttpRequest, member: Member) -> HttpResponse:
    from memory.recall import memory_stats

    return JsonResponse(memory_stats(member))


@memory_api(("GET",))
def export(request: HttpRequest, member: Member) -> HttpResponseBase:
    """The caller's own memories (both layers) as JSON lines, 500 a page; ``X-Next-Cursor`` pages on."""
    own = Memory.objects.filter(author=member).select_related("author__user").order_by("created_at", "id")
    cursor = request.GET.get("cursor")
    if cursor:
        try:
            stamp, last_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
            after = dt.datetime.fromisoformat(stamp)
            if after.tzinfo is None:
                raise ValueError("a cursor's time carries its offset")
            # Checked here: a malformed id reached the query, whose error repeated the decoded text.
            last_id = str(uuid.UUID(last_id))
        except (ValueError, UnicodeDecodeError) as exc:
            raise MemoryInvalid("cursor is not one this API issued") from exc
        from django.db.models import Q

        own = own.filter(Q(created_at__gt=after) | Q(created_at=after, id__gt=last_id))
    page = list(own[: EXPORT_PAGE + 1])
    lines = "".join(json.dumps(serialise(memory), ensure_ascii=False) + "\n" for memory in page[:EXPORT_PAGE])
    response = HttpResponse(lines, content_type="application/x-ndjson")
    if len(page) > EXPORT_PAGE:
        last = page[EXPORT_PAGE - 1]
        response["X-Next-Cursor"] = base64.urlsafe_b64encode(
            f"{last.created_at.isoformat()}|{last.pk}".encode()
        ).decode()
    return response


@memory_api(("POST",), rate_class="upload")
def import_lines(request: HttpRequest, member: Member) -> HttpResponse:
    """Capture up to 500 JSON lines through the full pipeline; all lines are checked before any is stored.

    Beyond the call itself (``upload`` class), every record counts in the ``import`` class:
    each is embedded, and a person's embeddings per minute are bounded.
    """
    status, answer = import_records(member, request.body)
    if status == 429:
        return throttled(request, RateLimited(int(answer["retry_after"])),
                         "Too many records imported this minute; retry after {seconds} seconds.", api=True)  # fmt: skip
    return JsonResponse(answer, status=status)


def import_records(member: Member, body: bytes) -> tuple[int, dict[str, Any]]:
    """Capture up to 500 JSON lines through the full pipeline; every line is checked before any
    is stored. Returns (HTTP status, body): 200 with a result per line, 400 naming each bad
    line (nothing stored), or 429 with ``retry_after`` when the records are over the window.
    """
    try:
        # Lines as JSON Lines means them: split at "\n" only (str.splitlines also splits at
        # U+2028 and U+0085, which JSON strings may hold as written), numbered as the file is,
        # blank lines counted, so "line 6" is the sixth line of what was sent.
        numbered = [
            (number, line) for number, line in enumerate(body.decode("utf-8").split("\n"), start=1) if line.strip()
        ]
    except UnicodeDecodeError as exc:
        raise MemoryInvalid("the body must be UTF-8 JSON lines") from exc
    if not numbered:
        raise MemoryInvalid("send one JSON object a line")
    if len(numbered) > IMPORT_MAX_LINES:
        raise MemoryInvalid(f"at most {IMPORT_MAX_LINES} lines a request; send the rest in another")
    records: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    for number, line in numbered:
        try:
            record = parse_json(line, check_text=False)  # a NUL is refused per record by the capture pipeline
        except InputRefused as refused:
            problems.append(f"line {number}: " + ("not JSON" if refused.code == "not_json" else str(refused)))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("content"), str):
            problems.append(f"line {number}: needs an object with a content string")
            continue
        records.append((number, record))
    if problems:
        refusal = error_body("invalid", "nothing was imported")
        refusal["error"]["lines"] = problems
        return 400, refusal
    try:
        hit(principal_key=f"member:{member.pk}", rate_class="import", cost=len(records))
    except RateLimited as limited:
        return 429, {"retry_after": limited.retry_after}
    results: list[dict[str, Any]] = []
    rejected: list[str] = []
    # All or nothing: every record goes through the pipeline inside one transaction, and one
    # refusal (a secret, a bad field) rolls every stored line back.
    with transaction.atomic():
        for number, record in records:
            try:
                with transaction.atomic():
                    result = memory_remember(
                        actor=member, content=record["content"], tags=record.get("tags"),
                        workspace=record.get("workspace"), source=record.get("source") or "",
                        importance=record.get("importance"), kind=record.get("kind"),
                        volatility=record.get("volatility"),
                    )  # fmt: skip
                    wanted = record.get("status")
                    # A record held as a draft (it contradicts a canonical memory) stays a draft,
                    # as the same text captured directly does: two canonical memories never contradict.
                    held = result.contradiction_outcome == "held" and wanted == "canonical"
                    if wanted and wanted != result.memory.status and result.outcome != "duplicate" and not held:
                        memory_set_status(actor=member, memory_id=result.memory.pk, status=wanted)
            except (MemoryInvalid, SecretRefused, NulRefused) as invalid:
                rejected.append(f"line {number}: {invalid}")
                continue
            results.append({"line": number, "outcome": result.outcome, "id": str(result.memory.pk)})
        if rejected:
            transaction.set_rollback(True)
    if rejected:
        refusal = error_body("invalid", "nothing was imported")
        refusal["error"]["lines"] = rejected
        return 400, refusal
    return 200, {"results": results}
