"""Prompt capsules: deterministic, cacheable context projections of canonical memories.

A capsule entry is a canonical memory with exactly one target tag (``capsule:core`` or
``capsule:project:<id>``) and exactly one ``capsule-slot:<slot>`` tag. Slots come out in a
fixed order; a slot with two canonical entries is ambiguous and omitted (reported in
``duplicate_slots``); malformed entries are skipped (``invalid_entries``). The prompt text
is deterministic JSON with no timestamps, ids or ETags; its budget is 12,000 characters,
and once a slot would exceed it, that slot and every later one are omitted.

Bodies are cached in Redis per layer and revision for an hour; the revision is advanced
by database triggers (``memory.capsule_sql``), so a cached read costs one indexed query.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db import connection

from brain.domain import DomainError
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.models import Memory, PromptCapsuleRevision, Status, Workspace

SCHEMA = "brain.prompt-capsule/v1"
MAX_CHARS = 12_000
MAX_CANDIDATES = 200
CACHE_SECONDS = 3600
SLOTS = {
    "core": ("identity", "preferences", "constraints", "principles"),
    "project": ("current-state", "decisions", "open-questions"),
}
PROJECT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class CapsuleRefused(DomainError):
    """A capsule that cannot be served (HTTP 409): ``refusal`` and ``reason`` say why."""

    status = 409

    def __init__(self, code: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]  # each refusal has its own stable code
        self.reason = reason

    @property
    def safe_message(self) -> str:
        return f"{self.code} ({self.reason}): {self}"


@dataclass(frozen=True)
class Capsule:
    payload: dict[str, Any]
    etag: str  # strong: "pcv1-<sha256 of the payload>"


def normalise_content(text: str) -> str:
    """CRLF → LF, trailing spaces per line removed, leading/trailing blank lines removed."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def _serialise(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def etag_of(payload: dict[str, Any]) -> str:
    """The strong ETag of a capsule payload: ``"pcv1-<sha256 of its canonical JSON>"``."""
    return '"pcv1-' + hashlib.sha256(_serialise(payload).encode("utf-8")).hexdigest() + '"'


def _layer(member: Member, workspace: str) -> str:
    return "company" if workspace == Workspace.COMPANY else f"personal:{member.pk}"


def _entry_problem(memory: Memory, target: str, kind: str) -> tuple[str | None, str | None]:
    """(slot, problem) of one candidate: exactly one target tag and one valid slot tag."""
    targets = [tag for tag in memory.tags if tag == "capsule:core" or tag.startswith("capsule:project:")]
    slots = [tag.removeprefix("capsule-slot:") for tag in memory.tags if tag.startswith("capsule-slot:")]
    if targets != [target]:
        return None, "needs exactly one capsule target tag"
    if len(slots) != 1:
        return None, "needs exactly one capsule-slot tag"
    if slots[0] not in SLOTS[kind]:
        return None, f"slot {slots[0]!r} is not one of {', '.join(SLOTS[kind])}"
    return slots[0], None


def _settled(entries: list[Memory], workspace: str) -> Memory | None:
    """The entry a slot serves: its only one; in the shared layer, of several, the one entry an
    administrator wrote (any member may publish a canonical entry there, and a competing one
    took an administrator's slot out of every agent's capsule); otherwise none."""
    if len(entries) == 1:
        return entries[0]
    if workspace != Workspace.COMPANY:
        return None
    by_administrators = [entry for entry in entries if entry.author.is_administrator and entry.author.user.is_active]
    return by_administrators[0] if len(by_administrators) == 1 else None


def build(member: Member, kind: str, project_id: str | None, workspace: str) -> Capsule:
    """Assemble a capsule from the database (no cache). Raises ``CapsuleRefused`` for the 409s."""
    target = "capsule:core" if kind == "core" else f"capsule:project:{project_id}"
    candidates = Memory.objects.filter(
        is_capsule=True, workspace=workspace, status=Status.CANONICAL, tags__contains=[target]
    )
    if workspace == Workspace.PERSONAL:
        candidates = candidates.filter(author=member)
    rows = list(candidates.select_related("author__user").order_by("created_at", "id")[: MAX_CANDIDATES + 1])
    crowded = len(rows) > MAX_CANDIDATES and workspace == Workspace.COMPANY
    if crowded:
        # Any member may publish a shared entry: 201 of them took the capsule down for everyone,
        # the administrators' entries with it. Past the bound only theirs are read (``_settled``
        # would serve theirs over any other anyway), and the capsule says it is not complete.
        administrators = candidates.filter(
            author__role__in=(Member.Role.OWNER, Member.Role.ADMIN), author__is_active=True,
            author__user__is_active=True,
        )  # fmt: skip
        rows = list(administrators.select_related("author__user").order_by("created_at", "id")[: MAX_CANDIDATES + 1])
    if len(rows) > MAX_CANDIDATES:
        raise CapsuleRefused("too_many_candidates", "too-many-candidates",
                             f"more than {MAX_CANDIDATES} canonical entries name this capsule")  # fmt: skip
    invalid: list[dict[str, str]] = []
    by_slot: dict[str, list[Memory]] = {}
    for memory in rows:
        slot, problem = _entry_problem(memory, target, kind)
        if problem is not None:
            invalid.append({"entry_id": str(memory.pk), "reason": problem})
            continue
        by_slot.setdefault(slot, []).append(memory)  # type: ignore[arg-type]
    duplicate_slots = sorted((slot for slot, entries in by_slot.items() if len(entries) > 1), key=SLOTS[kind].index)
    header: dict[str, Any] = {"schema": SCHEMA, "kind": kind}
    if kind == "project":
        header["project"] = project_id
    sections: list[dict[str, str]] = []
    used: list[dict[str, str]] = []
    omitted: list[str] = []
    for slot in SLOTS[kind]:
        entry = _settled(by_slot.get(slot, []), workspace)
        if entry is None:
            continue
        section = {"slot": slot, "content": normalise_content(entry.content)}
        if len(_serialise({**header, "sections": [section]})) > MAX_CHARS:
            if workspace == Workspace.PERSONAL:
                message = f"the {slot} entry alone is longer than the {MAX_CHARS}-character budget"
                raise CapsuleRefused("invalid_prompt_capsule", "content-too-large", message)
            invalid.append({"entry_id": str(entry.pk), "reason": "content-too-large"})
            continue
        if omitted or len(_serialise({**header, "sections": [*sections, section]})) > MAX_CHARS:
            omitted.append(slot)
            continue
        sections.append(section)
        used.append({"slot": slot, "entry_id": str(entry.pk)})
    text = _serialise({**header, "sections": sections})
    populated = bool(sections)
    payload = {
        "kind": kind,
        "project_id": project_id,
        "workspace": workspace,
        "populated": populated,
        "complete": populated and not (duplicate_slots or invalid or omitted or crowded),
        "crowded": crowded,
        "text": text,
        "prompt_hash": "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "sections": used,
        "omitted_slots": omitted,
        "duplicate_slots": duplicate_slots,
        "invalid_entries": invalid,
        "char_count": len(text),
        "max_chars": MAX_CHARS,
    }
    return Capsule(
        payload=payload, etag='"pcv1-' + hashlib.sha256(_serialise(payload).encode("utf-8")).hexdigest() + '"'
    )


def revision(layer: str) -> str:
    """The layer's current revision; a layer with none gets a fresh opaque one (never a sentinel)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT revision FROM prompt_capsule_revisions WHERE layer = %s", [layer])
        row = cursor.fetchone()
        if row is not None:
            return str(row[0])
        cursor.execute(
            "INSERT INTO prompt_capsule_revisions (layer, revision, updated_at) "
            "VALUES (%s, replace(gen_random_uuid()::text, '-', ''), now()) "
            "ON CONFLICT (layer) DO NOTHING",
            [layer],
        )
        cursor.execute("SELECT revision FROM prompt_capsule_revisions WHERE layer = %s", [layer])
        return str(cursor.fetchone()[0])  # type: ignore[index]


def _administrators() -> str:
    """A digest of who administers now: a cached shared capsule built while someone else did
    (an administrator since suspended or demoted) is not served."""
    from django.contrib.auth import get_user_model

    members, users = Member._meta.db_table, get_user_model()._meta.db_table
    sql = (
        "SELECT md5(coalesce(string_agg(m.id::text, ',' ORDER BY m.id), '')) "  # noqa: S608 - model table names only
        f"FROM {members} m JOIN {users} u ON u.id = m.user_id "
        "WHERE m.role IN ('owner', 'admin') AND m.is_active AND u.is_active"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return str(cursor.fetchone()[0])[:12]  # type: ignore[index]


def cache_key(layer: str, rev: str, kind: str, project_id: str | None) -> str:
    return f"capsule:v1:{layer}:{rev}:{kind}:{project_id or ''}"


def get_capsule(*, member: Member, kind: str, project_id: str | None = None, workspace: str | None = None) -> Capsule:
    """The capsule ``member`` may read: their own personal one, or the shared layer's."""
    if kind not in SLOTS:
        raise MemoryInvalid('kind must be "core" or "project"')
    if kind == "project":
        if not isinstance(project_id, str) or not PROJECT_ID.fullmatch(project_id):
            raise MemoryInvalid("project id must match ^[a-z0-9][a-z0-9_-]{0,63}$")
    else:
        project_id = None
    layer_name = workspace or Workspace.PERSONAL
    if layer_name not in Workspace.values:
        raise MemoryInvalid('workspace must be "personal" or "company"')
    if not member.is_active:
        raise MemoryInvalid("only an active member reads capsules")
    layer = _layer(member, layer_name)
    rev = revision(layer)
    if layer_name == Workspace.COMPANY:
        rev += ":" + _administrators()  # a contested shared slot serves an administrator's entry (``_settled``)
    key = cache_key(layer, rev, kind, project_id)
    cached = cache.get(key)
    if isinstance(cached, dict) and isinstance(cached.get("payload"), dict) and isinstance(cached.get("etag"), str):
        payload = cached["payload"]
        expected = etag_of(payload)
        if cached["etag"] == expected:  # a tampered or malformed value is a miss
            return Capsule(payload=payload, etag=expected)
    capsule = build(member, kind, project_id, layer_name)
    if capsule.payload["populated"] or kind == "core":  # arbitrary project ids must not create keys
        cache.set(key, {"payload": capsule.payload, "etag": capsule.etag}, timeout=CACHE_SECONDS)
    return capsule


__all__ = ["Capsule", "CapsuleRefused", "PromptCapsuleRevision", "get_capsule", "normalise_content"]
