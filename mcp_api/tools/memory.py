"""The memory tools on ``POST /api/mcp``, for person tokens with the ``memory`` scope.

Each is a thin shell over ``memory.services`` / ``memory.recall`` (the same functions
behind REST and the dashboard). Text copies carry ``ID:`` lines and ``(NN% match)``, and
stay within a 12,000-character budget with a truncation marker.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue, field_validator

from grants.models import Member
from mcp_api.base import PERSON, SCOPE_MEMORY, Args, Caller, Out, Tool
from memory.capsules import get_capsule
from memory.models import Memory, MemoryLink
from memory.recall import memory_connections, memory_get, memory_list_recent, memory_recall
from memory.services import (
    MAX_CONTENT,
    memory_append,
    memory_forget,
    memory_link,
    memory_remember,
    memory_set_status,
    memory_share,
    memory_unlink,
    memory_update,
)

TEXT_BUDGET = 12_000
TRUNCATED = "\n[… truncated to 12,000 characters; narrow the request for more]"
Layer = Literal["personal", "company"]
LinkTypeName = Literal[
    "relates_to", "supersedes", "caused_by", "decided", "about_person", "part_of_project", "follows", "drawn_from"
]


# The one team of a brain, as ``list_teams`` names it. Memory calls may name it (the seed's
# multi-team clients do); naming anything else is a clear refusal, never silently ignored.
THE_TEAM = {"id": "company", "name": "Shared", "workspace": "company"}


# Published bounds the service enforces (``memory.services``): a memory's text, never blank.
_TEXT_BOUNDS: dict[str, JsonValue] = {"minLength": 1, "maxLength": MAX_CONTENT}


class TeamArgs(Args):
    team: str | None = Field(
        None, description="The team: this brain has one, id 'company' (name 'Shared'); omit it or name it"
    )

    @field_validator("team")
    @classmethod
    def _the_team(cls, value: str | None) -> str | None:
        if value is not None and value not in (THE_TEAM["id"], THE_TEAM["name"]):
            # The value is not echoed: whatever was sent is not repeated back or into a log.
            raise ValueError("unknown team: this brain has one team, id 'company' (name 'Shared')")
        return value


def _member(caller: Caller) -> Member:
    if not isinstance(caller.principal, Member):
        raise PermissionError("memories belong to people")
    return caller.principal


def _budget(text: str) -> str:
    return text if len(text) <= TEXT_BUDGET else text[: TEXT_BUDGET - len(TRUNCATED)] + TRUNCATED


class MemoryOut(Out):
    id: str
    content: str
    tags: list[str]
    workspace: str
    author: str
    status: str
    importance: int
    kind: str
    volatility: str
    source: str
    created_at: str
    updated_at: str


def memory_out(memory: Memory) -> MemoryOut:
    return MemoryOut(
        id=str(memory.pk), content=memory.content, tags=memory.wire_tags, workspace=memory.workspace,
        author=memory.author.display_name, status=memory.status, importance=memory.importance, kind=memory.kind,
        volatility=memory.volatility, source=memory.source, created_at=memory.created_at.isoformat(),
        updated_at=memory.updated_at.isoformat(),
    )  # fmt: skip


def _line(memory: MemoryOut, *, match: float | None = None, hop: int = 0) -> str:
    prefix = f"({round(match * 100)}% match) " if match is not None else ""
    via = f" · via link ({hop} hop{'s' if hop > 1 else ''})" if hop else ""
    tags = f" · tags: {', '.join(memory.tags)}" if memory.tags else ""
    return (
        f"{prefix}{memory.content}\n"
        f"ID: {memory.id} · {memory.workspace} · by {memory.author} · {memory.created_at[:10]}{tags}{via}"
    )


def _render_memory(out: MemoryOut) -> str:
    return _budget(_line(out))


# --------------------------------------------------------------------------- remember


class RememberArgs(TeamArgs):
    content: str = Field(
        description="What to remember: a decision, preference, fact or project update",
        json_schema_extra=_TEXT_BOUNDS,
    )
    tags: list[str] | None = Field(None, description="Tags; 'status:canonical' marks it authoritative")
    workspace: Layer | None = Field(
        None,
        description="'personal' or 'company' (the shared team layer); left out: the member's default layer, "
        "else the team's (personal unless an administrator chose company)",
    )
    source: str = Field("", description="Where it came from (a URL, a tool, a meeting)")
    importance: int | None = Field(None, ge=1, le=5)
    kind: Literal["episodic", "semantic"] | None = None
    volatility: Literal["durable", "state", "volatile"] | None = None


class LinkRef(BaseModel):
    id: str
    type: str


class ContradictionRef(BaseModel):
    id: str
    kind: str
    reason: str
    outcome: str


class RememberOut(Out):
    id: str
    outcome: Literal["stored", "flagged", "duplicate", "updated", "unchanged"]
    workspace: str
    status: str
    tags: list[str]
    similarity: float | None
    duplicate_of: str | None
    links: list[LinkRef]
    contradiction: ContradictionRef | None = None


def remember(caller: Caller, args: RememberArgs) -> RememberOut:
    capture = memory_remember(
        actor=_member(caller), content=args.content, tags=args.tags, workspace=args.workspace, source=args.source,
        importance=args.importance, kind=args.kind, volatility=args.volatility,
    )  # fmt: skip
    memory = capture.memory
    return RememberOut(
        id=str(memory.pk), outcome=capture.outcome, workspace=memory.workspace, status=memory.status,
        tags=memory.wire_tags, similarity=capture.similarity,
        duplicate_of=str(capture.duplicate_of.pk) if capture.duplicate_of else None,
        links=[LinkRef(id=str(link.to_memory_id), type=link.type) for link in capture.links],
        contradiction=ContradictionRef(**found) if (found := capture.contradiction_summary()) else None,
    )  # fmt: skip


def _render_remember(out: RememberOut) -> str:
    match = f" ({round(out.similarity * 100)}% match)" if out.similarity is not None else ""
    if out.outcome == "duplicate":
        return f"Already remembered{match}: not stored again.\nID: {out.id}"
    lines = [f"Remembered in {out.workspace} as {out.status}.", f"ID: {out.id}"]
    if out.outcome == "flagged":
        lines.append(f"Possible duplicate of ID: {out.duplicate_of}{match} (tagged duplicate-candidate).")
    lines += [f"Linked ({link.type}) to ID: {link.id}" for link in out.links]
    if out.contradiction is not None:
        did = {"held": "it stays a draft: the other is canonical", "superseded": "the older one is now deprecated",
               "flagged": "tagged contradiction-candidate for a person to settle"}  # fmt: skip
        lines.append(f"Contradicts ID: {out.contradiction.id} ({out.contradiction.reason}); "
                     f"{did.get(out.contradiction.outcome, out.contradiction.outcome)}.")  # fmt: skip
    return "\n".join(lines)


# --------------------------------------------------------------------------- edits


class AppendArgs(TeamArgs):
    id: str
    text: str = Field(
        description="Added as '[Update <date>]: text' (the memory with it at most 20,000 characters)",
        json_schema_extra=_TEXT_BOUNDS,
    )


class UpdateArgs(TeamArgs):
    id: str
    content: str | None = Field(None, json_schema_extra=_TEXT_BOUNDS)
    tags: list[str] | None = Field(None, description="Replaces all tags when given")


class IdArgs(TeamArgs):
    id: str


class StatusArgs(TeamArgs):
    id: str
    status: Literal["canonical", "draft", "deprecated"]


class ShareArgs(TeamArgs):
    id: str
    workspace: Layer = Field("company", description="'company' shares it; 'personal' takes it back")


class LinkArgs(TeamArgs):
    from_id: str
    to_id: str
    type: LinkTypeName = "relates_to"


class UnlinkArgs(TeamArgs):
    from_id: str
    to_id: str
    type: LinkTypeName | None = None


class DoneOut(Out):
    id: str
    message: str


def append(caller: Caller, args: AppendArgs) -> MemoryOut:
    return memory_out(memory_append(actor=_member(caller), memory_id=args.id, text=args.text))


def update(caller: Caller, args: UpdateArgs) -> MemoryOut:
    return memory_out(memory_update(actor=_member(caller), memory_id=args.id, content=args.content, tags=args.tags))


def get(caller: Caller, args: IdArgs) -> MemoryOut:
    return memory_out(memory_get(actor=_member(caller), memory_id=args.id))


def forget(caller: Caller, args: IdArgs) -> DoneOut:
    memory_forget(actor=_member(caller), memory_id=args.id)
    return DoneOut(id=args.id, message="Forgotten permanently.")


def set_status(caller: Caller, args: StatusArgs) -> MemoryOut:
    return memory_out(memory_set_status(actor=_member(caller), memory_id=args.id, status=args.status))


def share(caller: Caller, args: ShareArgs) -> DoneOut:
    memory, removed = memory_share(actor=_member(caller), memory_id=args.id, workspace=args.workspace)
    note = f"; {removed} link(s) to memories left behind were removed" if removed else ""
    return DoneOut(id=str(memory.pk), message=f"Moved to {memory.workspace}{note}.")


def link(caller: Caller, args: LinkArgs) -> DoneOut:
    made: MemoryLink = memory_link(actor=_member(caller), from_id=args.from_id, to_id=args.to_id, type=args.type)
    return DoneOut(
        id=str(made.from_memory_id), message=f"Linked {made.from_memory_id} -{made.type}-> {made.to_memory_id}."
    )


def unlink(caller: Caller, args: UnlinkArgs) -> DoneOut:
    removed = memory_unlink(actor=_member(caller), from_id=args.from_id, to_id=args.to_id, type=args.type)
    return DoneOut(id=args.from_id, message=f"Removed {removed} link(s).")


def _render_done(out: DoneOut) -> str:
    return f"{out.message}\nID: {out.id}"


# --------------------------------------------------------------------------- reads


class RecallArgs(TeamArgs):
    query: str = Field(
        max_length=1000,
        description="A question or description in any words; time phrases like 'last week' filter by date",
    )
    topK: int = Field(5, ge=1, le=20)
    tag: str | None = None
    after: dt.datetime | None = None
    before: dt.datetime | None = None
    kind: Literal["episodic", "semantic"] | None = None
    hops: int = Field(0, ge=0, le=3, description="Follow links this many hops (score × 0.6 a hop)")
    workspace: Layer | None = None


class RecalledOut(MemoryOut):
    score: float
    similarity: float | None
    hop: int


class RecallOut(Out):
    results: list[RecalledOut]
    degraded: bool


def recall(caller: Caller, args: RecallArgs) -> RecallOut:
    found = memory_recall(
        actor=_member(caller), query=args.query, top_k=args.topK, tag=args.tag, after=args.after,
        before=args.before, kind=args.kind, hops=args.hops, workspace=args.workspace,
    )  # fmt: skip
    return RecallOut(
        results=[
            RecalledOut(**memory_out(item.memory).model_dump(), score=round(item.score, 6), similarity=item.similarity,
                        hop=item.hop)
            for item in found.results
        ],
        degraded=found.degraded,
    )  # fmt: skip


def _render_recall(out: RecallOut) -> str:
    if not out.results:
        return "No memories matched." + (" (keyword recall only: the embedder is unavailable)" if out.degraded else "")
    lines = [f"{len(out.results)} memor{'y' if len(out.results) == 1 else 'ies'}:"]
    if out.degraded:
        lines.append("(keyword recall only: the embedder is unavailable)")
    for number, item in enumerate(out.results, start=1):
        lines.append(f"{number}. " + _line(item, match=item.similarity, hop=item.hop))
    return _budget("\n".join(lines))


class RecentArgs(TeamArgs):
    n: int = Field(10, ge=1, le=50)
    tag: str | None = None
    kind: Literal["episodic", "semantic"] | None = None
    workspace: Layer | None = None
    actor: str | None = Field(None, description="Only memories written by this member (username)")


class MemoryListOut(Out):
    memories: list[MemoryOut]


def list_recent(caller: Caller, args: RecentArgs) -> MemoryListOut:
    memories = memory_list_recent(
        actor=_member(caller), n=args.n, tag=args.tag, kind=args.kind, workspace=args.workspace, author=args.actor
    )
    return MemoryListOut(memories=[memory_out(memory) for memory in memories])


def _render_list(out: MemoryListOut) -> str:
    if not out.memories:
        return "No memories."
    return _budget("\n".join(f"{number}. {_line(item)}" for number, item in enumerate(out.memories, start=1)))


class Team(BaseModel):
    id: str
    name: str
    workspace: str


class TeamsOut(Out):
    teams: list[Team]


def list_teams(caller: Caller, args: Args) -> TeamsOut:
    _member(caller)
    return TeamsOut(teams=[Team(**THE_TEAM)])


class Connection(BaseModel):
    direction: Literal["out", "in"]
    type: str
    id: str
    content: str


class ConnectionsOut(Out):
    id: str
    connections: list[Connection]


def connections(caller: Caller, args: IdArgs) -> ConnectionsOut:
    found = memory_connections(actor=_member(caller), memory_id=args.id)
    return ConnectionsOut(
        id=args.id,
        connections=[
            Connection(direction=direction, type=kind, id=str(other.pk), content=other.content[:300])  # type: ignore[arg-type]
            for direction, kind, other in found
        ],
    )


def _render_connections(out: ConnectionsOut) -> str:
    if not out.connections:
        return f"No connections.\nID: {out.id}"
    arrows = {"out": "→", "in": "←"}
    return _budget("\n".join(f"{arrows[c.direction]} {c.type}: {c.content}\nID: {c.id}" for c in out.connections))


class CapsuleArgs(TeamArgs):
    kind: Literal["core", "project"]
    project_id: str | None = Field(None, description="For kind 'project': ^[a-z0-9][a-z0-9_-]{0,63}$")
    workspace: Layer | None = Field(None, description="'personal' (default) or 'company'")


class CapsuleSection(BaseModel):
    slot: str
    entry_id: str


class CapsuleOut(Out):
    kind: str
    project_id: str | None
    workspace: str
    populated: bool
    complete: bool
    text: str
    prompt_hash: str
    sections: list[CapsuleSection]
    omitted_slots: list[str]
    duplicate_slots: list[str]
    invalid_entries: list[dict[str, str]]
    crowded: bool = Field(description="Over 200 shared entries name it: only administrators' entries were read")
    char_count: int
    max_chars: int
    etag: str


def get_prompt_capsule(caller: Caller, args: CapsuleArgs) -> CapsuleOut:
    capsule = get_capsule(member=_member(caller), kind=args.kind, project_id=args.project_id, workspace=args.workspace)
    return CapsuleOut(**capsule.payload, etag=capsule.etag)


def _render_capsule(out: CapsuleOut) -> str:
    return out.text if out.populated else "The capsule is empty: no canonical entries define its slots."


def _tool(name: str, description: str, args: Any, out: Any, handler: Any, render: Any, **kwargs: Any) -> Tool:
    if kwargs.get("read_only") is False:
        kwargs.setdefault("rate_class", "write")  # a write counts in the write window (mcp_api.base.Tool)
    return Tool(
        name, description, args, out, handler, kinds=frozenset({PERSON}), scopes=frozenset({SCOPE_MEMORY}),
        render=render, **kwargs,
    )  # fmt: skip


MEMORY_TOOLS: tuple[Tool, ...] = (
    _tool("remember", "Store an idea, decision, preference or project context (in the member's default layer unless workspace says; say workspace='personal' for anything private).", RememberArgs, RememberOut, remember, _render_remember, read_only=False, rate_class="write"),
    _tool("append", "Add a timestamped update to a memory.", AppendArgs, MemoryOut, append, _render_memory, read_only=False, rate_class="write"),
    _tool("update", "Replace a memory's content and/or all its tags.", UpdateArgs, MemoryOut, update, _render_memory, read_only=False, rate_class="write"),
    _tool("recall", "Find memories by meaning, whatever words were used when saving them.", RecallArgs, RecallOut, recall, _render_recall, rate_class="search"),
    _tool("list_recent", "Browse recently saved memories.", RecentArgs, MemoryListOut, list_recent, _render_list),
    _tool("list_teams", "The shared teams you belong to (one per brain for now: 'company').", Args, TeamsOut, list_teams, None),
    _tool("get", "Read one memory by ID.", IdArgs, MemoryOut, get, _render_memory),
    _tool("forget", "Permanently delete a memory.", IdArgs, DoneOut, forget, _render_done, read_only=False),
    _tool("set_status", "Mark a memory canonical, draft or deprecated.", StatusArgs, MemoryOut, set_status, _render_memory, read_only=False),
    _tool("link", "Add a relationship between two memories of the same layer.", LinkArgs, DoneOut, link, _render_done, read_only=False),
    _tool("unlink", "Remove relationships between two memories.", UnlinkArgs, DoneOut, unlink, _render_done, read_only=False),
    _tool("connections", "The memories connected to a memory.", IdArgs, ConnectionsOut, connections, _render_connections),
    _tool("get_prompt_capsule", "A deterministic core or project context projection for a prompt prefix (with its ETag).", CapsuleArgs, CapsuleOut, get_prompt_capsule, _render_capsule),
    _tool("share", "Move a memory between your personal layer and the shared team layer ('company').", ShareArgs, DoneOut, share, _render_done, read_only=False),
)  # fmt: skip
