"""The memory dashboard and the Memory tokens page: the same services as MCP and REST.

Every view acts as the signed-in active member; a memory they may not see is the same 404
as a missing one, and a refused change says which rule refused it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from brain.domain import DomainError
from brain.inputs import typed_back
from brain.text.secrets import NulRefused, SecretRefused
from grants.decorators import limited_view, member_required
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.insights import latest_for
from memory.models import PERSONAL_TOKEN_SCOPES, LinkType, Memory, MemoryApiToken, Workspace, default_personal_scopes
from memory.recall import memory_connections, memory_get, memory_list_recent, memory_recall
from memory.services import (
    may_change,
    memory_append,
    memory_forget,
    memory_link,
    memory_remember,
    memory_set_status,
    memory_share,
    memory_update,
)
from memory.tokens import api_token_issue, api_token_revoke

# What the memory layer refuses a person with, in words they can act on.
REFUSALS = (PermissionDenied, MemoryInvalid, SecretRefused, NulRefused)


def member_view(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """``member_required``, with the memory layer's domain errors turned into messages or 404s."""

    @member_required
    @wraps(view)
    def wrapped(request: HttpRequest, member: Member, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return view(request, member, *args, **kwargs)
        except Memory.DoesNotExist as exc:
            raise Http404 from exc
        except REFUSALS as refusal:
            messages.error(request, str(refusal) or "You may not do this.")
            back = request.META.get("HTTP_REFERER", "")
            safe = url_has_allowed_host_and_scheme(
                back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
            )
            return redirect(back if back and safe else "memory:dashboard")

    return wrapped


_ISSUED_SESSION_KEY = "memory-token-issued"  # the session entry, not a token


@require_http_methods(["GET", "POST"])
@limited_view("write")
@member_view
def dashboard(request: HttpRequest, member: Member) -> HttpResponseBase:
    if request.method == "POST":
        tags = [tag for tag in request.POST.get("tags", "").split(",") if tag.strip()]
        try:
            capture = memory_remember(
                actor=member, content=request.POST.get("content", ""), tags=tags,
                workspace=request.POST.get("workspace") or None,
            )  # fmt: skip
        except (MemoryInvalid, SecretRefused, NulRefused) as invalid:
            # The page as it was, with what was typed (the layer too) beside why not. A field
            # holding a refused secret (or a NUL) comes back empty: never echoed into the page.
            messages.error(request, str(invalid))
            shown = typed_back(request.POST)
            typed = {field: shown.get(field, "") for field in ("content", "tags", "workspace")}
            return render(request, "memory/dashboard.html", {**_recent(request, member), "typed": typed}, status=400)
        notes = {"stored": "Remembered.", "flagged": "Remembered — it looks like one you already have.",
                 "duplicate": "You already had this memory: nothing new was stored."}  # fmt: skip
        messages.success(request, notes.get(capture.outcome, "Remembered."))
        contradicts = capture.contradiction_summary()
        if contradicts is not None:
            did = {"held": "It is kept as a draft: the other memory is canonical.",
                   "superseded": "Your older memory is now deprecated.",
                   "flagged": "It is tagged contradiction-candidate for someone to settle."}  # fmt: skip
            messages.warning(
                request, f"It contradicts another memory ({contradicts['reason']}). {did[contradicts['outcome']]}"
            )
        return redirect("memory:detail", memory_id=capture.memory.pk)
    query = request.GET.get("q", "").strip()
    if not query:
        return render(request, "memory/dashboard.html", _recent(request, member))
    workspace = request.GET.get("workspace") or None
    tag = request.GET.get("tag") or None
    context: dict[str, Any] = {"query": query, "workspace": workspace, "tag": tag, "degraded": False, "insights": []}
    try:
        found = memory_recall(actor=member, query=query, top_k=20, tag=tag, workspace=workspace)
    except MemoryInvalid as invalid:
        # The search box keeps what was typed, with why it was not run (as /search does).
        messages.error(request, str(invalid))
        return render(request, "memory/dashboard.html", {**context, "results": []}, status=400)
    context["results"] = [(item.memory, item.similarity) for item in found.results]
    context["degraded"] = found.degraded
    return render(request, "memory/dashboard.html", context)


def _recent(request: HttpRequest, member: Member) -> dict[str, Any]:
    """The dashboard without a recall: the insights and the newest memories, under the page's
    layer and tag filters (``?workspace=&tag=``)."""
    workspace = request.GET.get("workspace") or None
    tag = request.GET.get("tag") or None
    recent = memory_list_recent(actor=member, n=50, tag=tag, workspace=workspace)
    return {
        "query": "", "workspace": workspace, "tag": tag, "degraded": False, "insights": latest_for(member),
        "results": [(memory, None) for memory in recent],
    }  # fmt: skip


@require_GET
@member_view
def detail(request: HttpRequest, member: Member, memory_id: str) -> HttpResponseBase:
    memory = memory_get(actor=member, memory_id=memory_id)
    return render(request, "memory/detail.html", _detail_context(member, memory))


def _detail_context(member: Member, memory: Memory, typed: dict[str, str] | None = None) -> dict[str, Any]:
    """The memory page's context; ``typed`` is what a refused edit or update held, shown again."""
    return {
        "memory": memory, "may_change": may_change(member, memory), "connections": memory_connections(actor=member, memory_id=memory.pk),
        "link_types": LinkType.values, "statuses": ["canonical", "draft", "deprecated"], "typed": typed or {},
    }  # fmt: skip


@require_POST
@limited_view("write")
@member_view
def act(request: HttpRequest, member: Member, memory_id: str, action: str) -> HttpResponseBase:
    """One change to a memory: edit, append, status, share, link, forget."""
    memory = memory_get(actor=member, memory_id=memory_id)
    if action in ("edit", "append"):
        try:
            if action == "edit":
                tags = [tag for tag in request.POST.get("tags", "").split(",") if tag.strip()]
                memory_update(actor=member, memory_id=memory.pk, content=request.POST.get("content"), tags=tags)
            else:
                memory_append(actor=member, memory_id=memory.pk, text=request.POST.get("text", ""))
        except MemoryInvalid as invalid:
            # Shown again with what was typed, nothing saved (a refused secret is never echoed:
            # ``SecretRefused`` goes on to ``member_view``, which redirects).
            messages.error(request, str(invalid))
            fields = ("content", "tags") if action == "edit" else ("text",)
            typed = {"action": action, **{field: request.POST.get(field, "") for field in fields}}
            return render(request, "memory/detail.html", _detail_context(member, memory, typed), status=400)
        messages.success(request, "Saved." if action == "edit" else "Update added.")
    elif action == "status":
        memory_set_status(actor=member, memory_id=memory.pk, status=request.POST.get("status", ""))
        messages.success(request, "Status changed.")
    elif action == "share":
        moved, removed = memory_share(actor=member, memory_id=memory.pk, workspace=request.POST.get("workspace", ""))
        messages.success(
            request,
            (
                "Shared with the team."
                if moved.workspace == Workspace.COMPANY
                else "Moved to your personal memories."
                if moved.author_id == member.pk
                else "Moved back to its author's personal memories."
            )
            + (f" {removed} link(s) to memories left behind were removed." if removed else ""),
        )
        if moved.author_id != member.pk and moved.workspace == Workspace.PERSONAL:
            # An administrator un-shared a colleague's memory: it is theirs alone now, so its page
            # would be a 404 — back to the dashboard, where the message is read.
            return redirect("memory:dashboard")
    elif action == "link":
        try:
            memory_link(
                actor=member,
                from_id=memory.pk,
                to_id=request.POST.get("to_id", "").strip(),
                type=request.POST.get("type", "relates_to"),
            )
        except Memory.DoesNotExist:
            # On this memory's page, as the other refusals are (a bare 404 page lost it); one
            # message for an id that is no memory and one hidden from you.
            messages.error(request, "Not linked: no memory you can see has that id.")
        else:
            messages.success(request, "Linked.")
    elif action == "propose":
        return _propose(request, member, memory)
    elif action == "forget":
        memory_forget(actor=member, memory_id=memory.pk)
        messages.success(request, "Forgotten permanently.")
        return redirect("memory:dashboard")
    else:
        raise Http404
    return redirect("memory:detail", memory_id=memory.pk)


def _propose(request: HttpRequest, member: Member, memory: Memory) -> HttpResponseBase:
    """Open a build proposing the shared memory as a page (or a section of one); show the build."""
    from corpus.models import Page
    from memory.propose import memory_propose_page

    path = request.POST.get("path", "").strip()
    problem = ""
    try:
        build = memory_propose_page(
            actor=member,
            memory_id=memory.pk,
            path=path,
            title=request.POST.get("title", ""),
            add_to_existing=request.POST.get("mode") == "append",
        )
    except Page.DoesNotExist:
        problem = f"There is no page at {path} that you can read."
    except ValidationError as invalid:
        problems = [str(text) for texts in getattr(invalid, "message_dict", {"": invalid.messages}).values()
                    for text in texts]  # fmt: skip
        problem = "Not proposed: " + "; ".join(problems)
    except DomainError as refusal:  # a path or page document refused: the message names the rule
        problem = "Not proposed: " + refusal.safe_message
    if problem:
        # The memory's page again, the form open with what was typed (a redirect emptied it);
        # a refused secret is never echoed (SecretRefused goes on to ``member_view``).
        messages.error(request, problem)
        shown = typed_back(request.POST)
        typed = {"action": "propose", "path": shown.get("path", "").strip(), "title": shown.get("title", ""),
                 "mode": "append" if request.POST.get("mode") == "append" else "new"}  # fmt: skip
        return render(request, "memory/detail.html", _detail_context(member, memory, typed), status=400)
    messages.success(request, "A build with the draft page is open: review the diff, then submit it for review.")
    return redirect("builds:build-detail", public_id=build.public_id)


@require_GET
@member_view
def export(request: HttpRequest, member: Member) -> HttpResponseBase:
    """Everything the member wrote (both layers), as a JSON-lines download."""
    from memory.api import export_lines

    body = "".join(export_lines(member))
    response = HttpResponse(body, content_type="application/x-ndjson")
    response["Content-Disposition"] = 'attachment; filename="brain-memories.jsonl"'
    return response


@never_cache  # the new token is on this page once: Back must not bring it back from the browser's cache
@require_http_methods(["GET", "POST"])
@member_view
def tokens(request: HttpRequest, member: Member) -> HttpResponseBase:
    """Personal API tokens for the memory REST API: issue (shown once) and revoke.

    Post, redirect, get: the new token rides in the session to the very next page, which
    removes it as it shows it — so reloading the page neither issues a second token nor
    shows the first one again.
    """
    if request.method == "POST":
        if request.POST.get("revoke"):
            try:
                api_token_revoke(actor=member, token_id=int(request.POST["revoke"]))
            except (MemoryApiToken.DoesNotExist, ValueError) as exc:
                raise Http404 from exc
            messages.success(request, "Token revoked: it stops working at once.")
            return redirect("memory:tokens")
        try:
            _, raw = api_token_issue(
                actor=member, name=request.POST.get("name", ""), scopes=request.POST.getlist("scopes")
            )
        except MemoryInvalid as invalid:
            # The form again with what was typed and ticked, and why not: a redirect emptied it.
            messages.error(request, str(invalid))
            chosen = request.POST.getlist("scopes")
            name = typed_back(request.POST).get("name", "")
            return _tokens_page(request, member, name=name, chosen=chosen, status=400)
        request.session[_ISSUED_SESSION_KEY] = raw
        return redirect("memory:tokens")
    return _tokens_page(request, member, issued=request.session.pop(_ISSUED_SESSION_KEY, None))


def _tokens_page(
    request: HttpRequest, member: Member, *, issued: str | None = None, name: str = "",
    chosen: list[str] | None = None, status: int = 200,
) -> HttpResponse:  # fmt: skip
    rows = MemoryApiToken.objects.filter(member=member, revoked_at__isnull=True)
    ticked = set(default_personal_scopes() if chosen is None else chosen)
    scopes = [(scope, SCOPE_HELP[scope], scope in ticked) for scope in PERSONAL_TOKEN_SCOPES]
    context = {"tokens": rows, "issued": issued, "scopes": scopes, "typed_name": name}
    return render(request, "memory/tokens.html", context, status=status)


SCOPE_HELP = {
    "memory": "your memories and the team's shared ones",
    "corpus:read": "read and search the pages and sources you can read; ask questions",
    "sources:write": "upload documents and tag sources",
    "builds:write": "open builds that propose page changes for review",
}
