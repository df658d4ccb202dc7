"""The one write path for memories: capture, edit, share, link, forget.

Every write is transactional, passes the secret detector, refuses NUL, and appends a
``MemoryEvent`` (never the content). Who may write:

- a personal memory: only its author (to anyone else it does not exist);
- a shared (``company``) memory: its author or an administrator; other members get a
  refusal naming the rule.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef, Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone
from pgvector.django import CosineDistance

from brain import embeddings
from brain.text.secrets import refuse, refused
from brain.vectors import current_model_q, refresh_stale_vectors
from corpus import lexical
from grants.audit import audit_record
from grants.models import Member
from memory.classify import (
    MemoryInvalid,
    classify_importance,
    classify_kind,
    classify_volatility,
    normalise_tags,
)
from memory.contradictions import Contradiction, contradiction
from memory.models import (
    Kind,
    LinkType,
    Memory,
    MemoryEvent,
    MemoryInsight,
    MemoryLink,
    MemoryPreference,
    Provenance,
    Status,
    TeamMemorySettings,
    Workspace,
)
from memory.occurred import checked_occurred_at
from memory.propose import memory_proposals_withdraw

MAX_CONTENT = 20_000
DUPLICATE_BLOCK = 0.95
DUPLICATE_FLAG = 0.85
AUTO_LINK = 0.78
AUTO_LINK_MAX = 3
FOLLOWS_WINDOW = dt.timedelta(minutes=30)
DUPLICATE_TAG = "duplicate-candidate"
CONTRADICTION_TAG = "contradiction-resolved"
CONTRADICTION_CANDIDATE_TAG = "contradiction-candidate"
# The model-free check reads the closest neighbours only: each one more is one more chance
# of a false flag (memory.contradictions favours precision).
CONTRADICTION_NEIGHBOURS = 2
CONTRADICTION_SIMILARITY = 0.6


@dataclass
class Capture:
    """What a capture did: ``stored``, ``flagged`` (stored, a near-duplicate) or ``duplicate``; and for a
    capture with an origin seen before (``memory_capture_from``): ``updated`` or ``unchanged``."""

    memory: Memory
    outcome: Literal["stored", "flagged", "duplicate", "updated", "unchanged"]
    duplicate_of: Memory | None = None
    similarity: float | None = None
    links: list[MemoryLink] = field(default_factory=list)
    # What the model-free check found against a neighbour, and what it did: "held" (the
    # neighbour is canonical; this memory stays a draft), "superseded" (the author's own
    # older memory was deprecated) or "flagged" (someone else's: tagged, nothing changed).
    contradiction: Contradiction | None = None
    contradicted: Memory | None = None
    contradiction_outcome: Literal["held", "superseded", "flagged"] | None = None

    def contradiction_summary(self) -> dict[str, str] | None:
        """The contradiction for a transport: the other memory, the kind, why, and what was done."""
        if self.contradiction is None or self.contradicted is None:
            return None
        return {
            "id": str(self.contradicted.pk),
            "kind": self.contradiction.kind,
            "reason": self.contradiction.reason,
            "outcome": self.contradiction_outcome or "",
        }


# --------------------------------------------------------------------------- helpers


def workspace_value(workspace: str | None) -> str | None:
    """Validate a layer name from the wire; None stays None."""
    if workspace is None or workspace == "":
        return None
    if workspace not in Workspace.values:
        raise MemoryInvalid('workspace must be "personal" or "company"')
    return workspace


@dataclass(frozen=True)
class CaptureDefaults:
    """Where a member's captures land and which tags they carry unless the caller says otherwise."""

    workspace: str
    tags: list[str]


def capture_defaults(member: Member) -> CaptureDefaults:
    """The member's own defaults, else the team's (``TeamMemorySettings``), else the deployment's setting.

    Tags add up: the team's default tags, then the member's.
    """
    preference = MemoryPreference.objects.filter(member=member).only("default_workspace", "default_tags").first()
    team = TeamMemorySettings.objects.filter(pk=1).first()
    workspace = (
        (preference.default_workspace if preference else "")
        or (team.default_workspace if team else "")
        or getattr(settings, "BRAIN_MEMORY_DEFAULT_WORKSPACE", None)
        or Workspace.PERSONAL
    )
    tags = [*(team.default_tags if team else []), *(preference.default_tags if preference else [])]
    return CaptureDefaults(workspace=workspace, tags=list(dict.fromkeys(tags)))


def default_workspace(member: Member) -> str:
    """The layer a capture lands in when the caller names none (see ``capture_defaults``)."""
    return capture_defaults(member).workspace


def _clean_content(content: Any, *, where: str = "content") -> str:
    if not isinstance(content, str) or not content.strip():
        raise MemoryInvalid(f"{where} must be non-empty text")
    if len(content) > MAX_CONTENT:
        raise MemoryInvalid(f"{where} may be at most {MAX_CONTENT} characters")
    refuse(content, field=where)
    return content.strip()


def duplicate_text(content: str) -> str:
    """What the duplicate check embeds: the whole text up to 1,500 characters, else first/middle/last 500."""
    if len(content) <= 1500:
        return content
    middle = len(content) // 2
    return "\n".join([content[:500], content[middle - 250 : middle + 250], content[-500:]])


def _embed(content: str) -> tuple[list[float] | None, str]:
    """The content's vector and model id, or (None, "") when the embedder is down (back-filled later)."""
    try:
        return [float(v) for v in embeddings.embed([duplicate_text(content)])[0]], embeddings.model_id()
    except embeddings.EmbeddingError:
        return None, ""


def _index(memory: Memory) -> None:
    memory.lexical = lexical.index_text(memory.content + "\n" + " ".join(memory.tags))
    memory.cjk_terms = lexical.index_terms(memory.content + " " + " ".join(memory.tags))


def _event(memory: Memory, actor: Member, action: str, **metadata: Any) -> None:
    MemoryEvent.objects.create(
        memory_id=memory.pk, actor=actor, action=action, workspace=memory.workspace, metadata=metadata
    )


def _require_member(actor: Any) -> Member:
    if not isinstance(actor, Member) or not actor.is_active:
        raise PermissionDenied("only an active member has memories")
    return actor


def member_still_here(actor: Member, *, lock: bool = False) -> bool:
    """Whether ``actor`` is still an active member, read now (``lock``: the row stays locked
    until the caller's transaction commits, so a suspension or offboarding waits for it)."""
    rows = Member.objects.filter(pk=actor.pk, is_active=True, offboarded_at=None)
    return (rows.select_for_update() if lock else rows).exists()


def _still_here(actor: Member, *, lock: bool) -> None:
    """``PermissionDenied`` (rolling the caller's transaction back) when ``actor`` was
    suspended or offboarded since the caller loaded them.

    The caller's copy may be minutes old (a calendar refresh, an import, a mail being read),
    and offboarding deletes the personal layer and the person's preferences: a write that
    went on landed in the deleted layer — or, the preference gone, in the team's default
    layer, published. With ``lock`` (the end of a write's own, short transaction) the row
    stays locked until commit, so an offboarding either waits for this write and then
    deletes it, or this write waits for the offboarding and is refused. Inside a longer
    transaction (an import) the row is only read: the import locks it at its end
    (``memory.vaults.common.store_plan``), and an offboarding never waits minutes on it.
    """
    if not member_still_here(actor, lock=lock):
        raise PermissionDenied("only an active member has memories")


def editable(actor: Member, memory_id: Any, *, change: str = "change") -> Memory:
    """The memory ``actor`` may change, locked for update.

    ``Memory.DoesNotExist`` when it is not visible to them (a teammate's personal memory
    and a missing id answer alike); ``PermissionDenied`` for a shared memory they did not
    write, unless they are an administrator — whose ``change`` (update, append, status,
    forget, share) of a colleague's memory is audited (``memory.admin_<change>``, in the
    caller's transaction: it stands only if the change does).
    """
    _require_member(actor)
    _still_here(actor, lock=False)
    memory = Memory.objects.visible_to(actor).select_for_update().get_by_id(memory_id)
    if not may_change(actor, memory):
        raise PermissionDenied("only the author or an admin may change a shared memory")
    _audit_colleagues_memory(actor, memory, change)
    return memory


def _audit_colleagues_memory(actor: Member, memory: Memory, change: str, **metadata: Any) -> None:
    """``memory.admin_<change>`` when ``actor`` changes a memory someone else wrote (an
    administrator, directly or through a model's verdict on their capture)."""
    if memory.author_id != actor.pk:
        audit_record(actor=actor, action=f"memory.admin_{change}", target_type="memory", target=str(memory.pk),
                     metadata={"author": memory.author.username, **metadata})  # fmt: skip


def nearest(
    actor: Member, workspace: str, vector: list[float], *, exclude: Any = None, limit: int = 10
) -> list[tuple[Memory, float]]:
    """The closest live memories in ``workspace`` that ``actor`` can see, with cosine similarity."""
    candidates = (
        Memory.objects.visible_to(actor)
        .filter(current_model_q(), workspace=workspace)
        .exclude(status=Status.DEPRECATED)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
    )
    if exclude is not None:
        candidates = candidates.exclude(pk=exclude)
    return [(memory, 1.0 - float(memory.distance)) for memory in candidates[:limit]]  # type: ignore[attr-defined]


def _still_in_layer(neighbours: list[tuple[Memory, float]], layer: str) -> list[tuple[Memory, float]]:
    """``neighbours`` still in ``layer``, each held (``FOR SHARE``, lowest id first) until the
    capture commits: one forgotten meanwhile failed the capture's links at commit (a 500), one
    un-shared meanwhile was linked from the other layer. A forget or a move of a held memory
    waits for the capture, then removes its links as for any other."""
    if not neighbours:
        return neighbours
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memory_memory WHERE id = ANY(%s) AND workspace = %s ORDER BY id FOR SHARE",
            [[memory.pk for memory, _ in neighbours], layer],
        )
        held = {row[0] for row in cursor.fetchall()}
    return [(memory, similarity) for memory, similarity in neighbours if memory.pk in held]


# --------------------------------------------------------------------------- capture


def memory_remember(
    *,
    actor: Member,
    content: str,
    tags: list[str] | None = None,
    workspace: str | None = None,
    source: str = "",
    importance: int | None = None,
    kind: str | None = None,
    volatility: str | None = None,
    origin: str = "",
    occurred_at: dt.datetime | None = None,
    block_duplicates: bool = True,
    written_elsewhere: bool = False,
) -> Capture:
    """Capture one memory through the pipeline.

    The member's capture defaults apply (``capture_defaults``): the layer when none is named,
    and the default tags always. ``origin`` (an import path's key, unique per author) and
    ``occurred_at`` (when an episodic memory happened) are stored as given; to update an
    earlier import of the same thing use ``memory_capture_from``. ``block_duplicates=False``
    flags a near-verbatim repeat instead of dropping it (distinct things that read alike).
    ``written_elsewhere``: the content is someone else's text (an invitation, a mail), whose
    hashtags never set the status or capsule tags (``normalise_tags``).

    Duplicate check on the content's embedding within the target layer: similarity ≥ 0.95
    stores nothing and returns the existing memory; ≥ 0.85 stores it tagged
    ``duplicate-candidate`` (no automatic verdict without a model: flag, don't guess; with
    one, ``memory.verdicts`` settles it after commit, and judges a related neighbour ≥ 0.78
    for contradiction).
    Then classification fills what the caller did not say (never ``canonical``), and up to
    3 neighbours with similarity ≥ 0.78 are linked; ``follows`` links the one episodic memory
    of the author's written in the previous 30 minutes, when there is exactly one.
    """
    _require_member(actor)
    text = _clean_content(content)
    defaults = capture_defaults(actor)
    parsed = normalise_tags(
        [*(tags or []), *defaults.tags] if isinstance(tags, list | None) else tags, text,
        controls_in_content=not written_elsewhere,
    )  # fmt: skip
    layer = workspace_value(workspace) or defaults.workspace
    # bool is an int to Python: "importance": true is refused, not stored as 1.
    if importance is not None and (
        isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 5
    ):
        raise MemoryInvalid("importance must be an integer from 1 to 5")
    if kind is not None and kind not in Kind.values:
        raise MemoryInvalid('kind must be "episodic" or "semantic"')
    if volatility is not None and volatility not in ("durable", "state", "volatile"):
        raise MemoryInvalid('volatility must be "durable", "state" or "volatile"')
    if not isinstance(source, str) or len(source) > 200:
        raise MemoryInvalid("source must be text of at most 200 characters")
    refuse(source, field="source")
    if not isinstance(origin, str) or len(origin) > 300:
        raise MemoryInvalid("origin must be text of at most 300 characters")
    refuse(origin, field="origin")
    occurred_at = checked_occurred_at(occurred_at)
    vector, model = _embed(text)

    outermost = not connection.in_atomic_block
    with transaction.atomic():
        neighbours = _still_in_layer(nearest(actor, layer, vector), layer) if vector is not None else []
        top = neighbours[0] if neighbours else None
        # "db-2" vs "db-3" reads alike (0.95) and says the opposite: a contradiction is no duplicate.
        disagrees = top is not None and top[1] >= DUPLICATE_FLAG and contradiction(top[0].content, text) is not None
        if block_duplicates and top is not None and top[1] >= DUPLICATE_BLOCK and not disagrees:
            return Capture(memory=top[0], outcome="duplicate", duplicate_of=top[0], similarity=top[1])
        flagged = top is not None and top[1] >= DUPLICATE_FLAG and not disagrees
        stored_tags = _with_room(parsed.tags, DUPLICATE_TAG) if flagged else parsed.tags[:64]
        memory = Memory(
            author=actor,
            workspace=layer,
            content=text,
            tags=stored_tags,
            source=source,
            origin=origin,
            occurred_at=occurred_at,
            status=parsed.status or Status.DRAFT,
            importance=importance or classify_importance(text, parsed.tags),
            kind=kind or classify_kind(text),
            volatility=volatility or classify_volatility(text),
            embedding=vector,
            embedding_model=model,
        )
        _index(memory)
        memory.save()
        _event(memory, actor, MemoryEvent.Action.CREATED, flagged=flagged)
        links = _auto_link(actor, memory, neighbours)
        settled = _settle_contradiction(actor, memory, neighbours)
        if settled is None and top is not None and top[1] >= AUTO_LINK:
            _queue_verdict(memory, top[0], top[1])
        capture = Capture(
            memory=memory,
            outcome="flagged" if flagged else "stored",
            duplicate_of=top[0] if flagged and top else None,
            similarity=top[1] if flagged and top else None,
            links=links,
        )
        if settled is not None:
            capture.contradiction, capture.contradicted, capture.contradiction_outcome = settled
        _still_here(actor, lock=outermost)
        return capture


def memory_capture_from(
    *,
    actor: Member,
    origin: str,
    content: str,
    source: str,
    tags: list[str] | None = None,
    workspace: str | None = None,
    kind: str | None = None,
    occurred_at: dt.datetime | None = None,
    written_elsewhere: bool = False,
) -> Capture:
    """Capture what an import or capture path found at ``origin``, or update what it found before.

    ``origin`` is the path's key for the thing (``obsidian:<vault>/<file>``, ``ics:<uid>``,
    ``email:<message-id>``…), unique per author. The first time, this is ``memory_remember``
    (the whole pipeline: scanner, defaults, duplicate check, classification, links). Later:
    ``unchanged`` when content, occurred time and tags are as imported, else ``updated`` —
    the content is replaced, tags are added (tags a person added in the brain stay), the
    layer is left where the person may have moved it.
    """
    _require_member(actor)
    if not isinstance(origin, str) or not origin.strip():
        raise MemoryInvalid("origin must be non-empty text")
    for _attempt in range(2):
        existing = Memory.objects.filter(author=actor, origin=origin).values_list("pk", flat=True).first()
        if existing is None:
            try:
                with transaction.atomic():
                    # Flag, never drop: a different origin is a different thing (the weekly 1:1s of a
                    # calendar read alike but are distinct events; a re-import matches by origin).
                    return memory_remember(
                        actor=actor, content=content, tags=tags, workspace=workspace, source=source,
                        kind=kind, origin=origin, occurred_at=occurred_at, block_duplicates=False,
                        written_elsewhere=written_elsewhere,
                    )  # fmt: skip
            except IntegrityError:
                continue  # the same origin imported concurrently: update what the other call stored
        return _update_from_origin(
            actor, existing, content=content, tags=tags, occurred_at=occurred_at, written_elsewhere=written_elsewhere
        )
    raise MemoryInvalid(f"origin {origin!r} is being imported by another request; try again")


def _update_from_origin(
    actor: Member,
    memory_id: Any,
    *,
    content: str,
    tags: list[str] | None,
    occurred_at: dt.datetime | None,
    written_elsewhere: bool = False,
) -> Capture:
    occurred_at = checked_occurred_at(occurred_at)
    text = _clean_content(content)
    parsed = normalise_tags(
        [*(tags or []), *capture_defaults(actor).tags], text, controls_in_content=not written_elsewhere
    )
    with transaction.atomic():
        memory = editable(actor, memory_id)
        merged = list(dict.fromkeys([*memory.tags, *parsed.tags]))[:64]
        if memory.content == text and memory.tags == merged and memory.occurred_at == occurred_at:
            return Capture(memory=memory, outcome="unchanged")
        changed_content = memory.content != text
        memory.content, memory.tags, memory.occurred_at = text, merged, occurred_at
        if changed_content:
            _reembed(memory)
        else:
            _index(memory)
        memory.save()
        _event(memory, actor, MemoryEvent.Action.UPDATED, content=changed_content, tags=True, origin=True)
        return Capture(memory=memory, outcome="updated")


def _settle_contradiction(
    actor: Member, memory: Memory, neighbours: list[tuple[Memory, float]]
) -> tuple[Contradiction, Memory, Literal["held", "superseded", "flagged"]] | None:
    """The model-free contradiction check on the new memory's closest same-layer neighbours.

    A canonical neighbour is protected: the new memory is kept as a draft whatever status
    was asked for (the neighbour's ``contradiction_wins`` counts it). The author's own
    older memory is superseded (deprecated, a ``supersedes`` link), as a model verdict
    would. Someone else's memory is never changed by a guess: the new one is tagged
    ``contradiction-candidate`` and linked to it for a person to settle.
    """
    for other, similarity in neighbours[:CONTRADICTION_NEIGHBOURS]:
        if similarity < CONTRADICTION_SIMILARITY:
            break
        found = contradiction(other.content, memory.content)
        if found is None:
            continue
        if other.status == Status.CANONICAL:
            if memory.status != Status.DRAFT:
                memory.status = Status.DRAFT
                memory.save(update_fields=["status", "updated_at"])
            Memory.objects.filter(pk=other.pk).update(contradiction_wins=F("contradiction_wins") + 1)
            _event(memory, actor, MemoryEvent.Action.STATUS_CHANGED, status=Status.DRAFT,
                   reason="contradicts protected", kind=found.kind, other=str(other.pk))  # fmt: skip
            _link_system(memory, other, LinkType.RELATES_TO)
            return found, other, "held"
        if other.author_id == actor.pk:
            Memory.objects.filter(pk=other.pk).update(
                status=Status.DEPRECATED, contradiction_losses=F("contradiction_losses") + 1, updated_at=timezone.now()
            )
            _event(other, actor, MemoryEvent.Action.STATUS_CHANGED, status=Status.DEPRECATED, reason="superseded",
                   kind=found.kind)  # fmt: skip
            memory.contradiction_wins += 1
            _tag(memory, CONTRADICTION_TAG, extra_fields=["contradiction_wins"])
            _link_system(memory, other, LinkType.SUPERSEDES)
            return found, other, "superseded"
        _tag(memory, CONTRADICTION_CANDIDATE_TAG)
        _link_system(memory, other, LinkType.RELATES_TO)
        return found, other, "flagged"
    return None


def _with_room(tags: list[str], *kept: str) -> list[str]:
    """At most 64 tags, the ``kept`` ones (a flag a person must see) always among them."""
    wanted = [tag for tag in kept if tag]
    return [*[tag for tag in tags if tag not in wanted][: 64 - len(wanted)], *wanted]


def may_change(actor: Member, memory: Memory) -> bool:
    """Whether ``actor`` may change ``memory`` (what ``editable`` allows, and what pages offer):
    its author, or an administrator on a shared memory."""
    return memory.author_id == actor.pk or (memory.workspace == Workspace.COMPANY and actor.is_administrator)


def _tag(memory: Memory, tag: str, *, extra_fields: list[str] | None = None) -> None:
    if tag not in memory.tags:
        # A flag ("settle this") is kept even on a memory that already holds 64 tags: the last
        # ordinary tag gives way, not the flag a person was told about.
        memory.tags = _with_room(memory.tags, tag)
    _index(memory)
    memory.save(update_fields=["tags", "lexical", "cjk_terms", "updated_at", *(extra_fields or [])])


def _link_system(memory: Memory, other: Memory, type: str) -> None:
    MemoryLink.objects.get_or_create(
        from_memory=memory, to_memory=other, type=type, defaults={"provenance": Provenance.SYSTEM}
    )


def _queue_verdict(new: Memory, old: Memory, similarity: float) -> None:
    """After commit, ask the model about the new memory and its closest neighbour (``memory.verdicts``).

    The job's row is written in the capture's transaction (``memory.verdict_jobs``): a lost
    message or a killed worker costs a sweep, never the verdict.
    """
    from memory.verdicts import enabled, open_verdicts

    if not enabled() or not open_verdicts(new, old, similarity):
        return

    from memory.verdict_jobs import verdict_job_queue

    verdict_job_queue(new, old, similarity)


def _auto_link(actor: Member, memory: Memory, neighbours: list[tuple[Memory, float]]) -> list[MemoryLink]:
    links = [
        MemoryLink(from_memory=memory, to_memory=other, type=LinkType.RELATES_TO, provenance=Provenance.INFERRED)
        for other, similarity in neighbours[:AUTO_LINK_MAX]
        if similarity >= AUTO_LINK
    ]
    if memory.kind == Kind.EPISODIC:
        recent = list(
            Memory.objects.filter(
                author=actor,
                workspace=memory.workspace,
                kind=Kind.EPISODIC,
                created_at__gte=timezone.now() - FOLLOWS_WINDOW,
            )
            .exclude(pk=memory.pk)
            .exclude(status=Status.DEPRECATED)[:2]
        )
        if len(recent) == 1:
            links.append(
                MemoryLink(from_memory=memory, to_memory=recent[0], type=LinkType.FOLLOWS, provenance=Provenance.SYSTEM)
            )
    return MemoryLink.objects.bulk_create(links, ignore_conflicts=True)


def apply_contradiction(*, actor: Member, new: Memory, old: Memory) -> Memory:
    """Settle a contradiction verdict (from a model): the newer memory wins, unless the old one is protected.

    The old memory is deprecated, a ``supersedes`` link is drawn new → old and the new one
    is tagged ``contradiction-resolved``. A canonical old memory is never overwritten:
    the new one is stored as a draft instead and the old one stays as it was.
    """
    with transaction.atomic():
        new = Memory.objects.select_for_update().get(pk=new.pk)
        old = Memory.objects.select_for_update().get(pk=old.pk)
        if not may_change(actor, old):
            # A model's verdict never does what its actor could not: a colleague's shared
            # memory is not theirs to deprecate. Flagged for a person to settle instead.
            _tag(new, CONTRADICTION_CANDIDATE_TAG)
            return new
        if old.status == Status.CANONICAL:
            new.status = Status.DRAFT
            new.save(update_fields=["status", "updated_at"])
            old.contradiction_wins += 1
            old.save(update_fields=["contradiction_wins", "updated_at"])
            _event(new, actor, MemoryEvent.Action.STATUS_CHANGED, status=Status.DRAFT, reason="contradicts protected")
            return new
        old.status = Status.DEPRECATED
        old.contradiction_losses += 1
        old.save(update_fields=["status", "contradiction_losses", "updated_at"])
        _audit_colleagues_memory(actor, old, "status", status=Status.DEPRECATED, verdict="contradiction")
        new.contradiction_wins += 1
        if CONTRADICTION_TAG not in new.tags:
            new.tags = [*new.tags, CONTRADICTION_TAG]
        _index(new)
        new.save(update_fields=["tags", "contradiction_wins", "lexical", "cjk_terms", "updated_at"])
        MemoryLink.objects.get_or_create(
            from_memory=new, to_memory=old, type=LinkType.SUPERSEDES, defaults={"provenance": Provenance.SYSTEM}
        )
        _event(old, actor, MemoryEvent.Action.STATUS_CHANGED, status=Status.DEPRECATED, reason="superseded")
        return new


def apply_duplicate_verdict(*, actor: Member, new: Memory, old: Memory, verdict: str) -> Memory:
    """Settle a flagged near-duplicate with a model's verdict: ``merge``, ``replace``,
    ``contradiction`` or ``keep_both``. Returns the memory that carries the content on.

    Called by ``memory.verdicts`` with a model's verdict (without a model, flags stay flags).
    A protected memory — canonical, or importance ≥ 4 — is never overwritten: ``merge`` and
    ``replace`` against it keep both instead. ``merge`` appends the new text to the old one
    and forgets the new row; ``replace`` puts the new text in the old row (its id, links and
    history stay) and forgets the new row.
    """
    if verdict not in ("merge", "replace", "contradiction", "keep_both"):
        raise MemoryInvalid('verdict must be "merge", "replace", "contradiction" or "keep_both"')
    if verdict == "contradiction":
        return apply_contradiction(actor=actor, new=new, old=old)
    with transaction.atomic():
        new = Memory.objects.select_for_update().get(pk=new.pk)
        old = Memory.objects.select_for_update().get(pk=old.pk)
        protected = old.status == Status.CANONICAL or old.importance >= 4
        merged = _with_update(old.content, new.content)
        keep_both = (
            verdict == "keep_both"
            or protected
            # The new row is forgotten below: a memory that cannot hold both texts, a new one
            # weightier than the old, or the verdict's actor not allowed to change the old one
            # keeps both instead of losing any of it.
            or (
                verdict == "merge"
                and (len(merged) > MAX_CONTENT or any(map(refused, _joinings(old.content, new.content))))
            )
            or new.status == Status.CANONICAL
            or new.importance > old.importance
            or not may_change(actor, old)
        )
        if keep_both:
            new.tags = [tag for tag in new.tags if tag != DUPLICATE_TAG]
            _index(new)
            new.save(update_fields=["tags", "lexical", "cjk_terms", "updated_at"])
            return new
        if verdict == "merge":
            old.content = merged
            action = MemoryEvent.Action.APPENDED
        else:
            old.content = new.content
            action = MemoryEvent.Action.UPDATED
        _audit_colleagues_memory(actor, old, "append" if verdict == "merge" else "update", verdict=verdict)
        # The new row's links move to the row that carries its text on; one the old row already
        # has (both linked the same neighbour) is dropped, not doubled (memory_link_unique).
        same_out = MemoryLink.objects.filter(from_memory=old, to_memory=OuterRef("to_memory"), type=OuterRef("type"))
        same_in = MemoryLink.objects.filter(to_memory=old, from_memory=OuterRef("from_memory"), type=OuterRef("type"))
        MemoryLink.objects.filter(from_memory=new).filter(Exists(same_out)).delete()
        MemoryLink.objects.filter(to_memory=new).filter(Exists(same_in)).delete()
        MemoryLink.objects.filter(from_memory=new).exclude(to_memory=old).update(from_memory=old)
        MemoryLink.objects.filter(to_memory=new).exclude(from_memory=old).update(to_memory=old)
        old.tags = _with_room(list(dict.fromkeys([*old.tags, *(tag for tag in new.tags if tag != DUPLICATE_TAG)])))
        _reembed(old)
        old.save()
        _event(old, actor, action, verdict=verdict)
        _event(new, actor, MemoryEvent.Action.DELETED, verdict=verdict, into=str(old.pk))
        new.delete()
        return old


# --------------------------------------------------------------------------- edits


def _with_update(content: str, addition: str) -> str:
    """A memory with ``addition`` appended as a dated update (an append, a merge)."""
    return f"{content}\n\n[Update {timezone.now().date().isoformat()}]: {addition}"


def _joinings(content: str, addition: str) -> tuple[str, str]:
    """The texts a secret check reads when ``addition`` joins ``content``: as stored, and
    without the update's date marker, which would otherwise stand where a value is read
    ("wifi password:" then "[Update …]: Xk9#mP2$vL7q")."""
    return _with_update(content, addition), f"{content}\n{addition}"


def memory_append(*, actor: Member, memory_id: Any, text: str) -> Memory:
    """Add ``\\n\\n[Update <date>]: text`` to a memory and re-index it."""
    addition = _clean_content(text, where="text")
    with transaction.atomic():
        memory = editable(actor, memory_id, change="append")
        content = _with_update(memory.content, addition)
        if len(content) > MAX_CONTENT:
            raise MemoryInvalid(f"content may be at most {MAX_CONTENT} characters (with the update)")
        # The joined text, not only the addition: "wifi password:" then "Xk9#mP2$vL7q" is a
        # secret neither half is (the capture of the whole is refused).
        for joined in _joinings(memory.content, addition):
            refuse(joined, field="text")
        memory.content = content
        _reembed(memory)
        memory.save()
        _event(memory, actor, MemoryEvent.Action.APPENDED, characters=len(addition))
        return memory


def memory_update(
    *, actor: Member, memory_id: Any, content: str | None = None, tags: list[str] | None = None
) -> Memory:
    """Replace a memory's content and/or (all of) its tags."""
    if content is None and tags is None:
        raise MemoryInvalid("give content, tags or both")
    with transaction.atomic():
        memory = editable(actor, memory_id, change="update")
        if content is not None:
            memory.content = _clean_content(content)
        if tags is not None:
            parsed = normalise_tags(tags, memory.content)
            memory.tags = parsed.tags
            # A status tag written now sets the status: in the new tags, or in text edited now.
            # One left in the unedited text does not: a tags-only edit made a memory deprecated
            # (or held as a draft beside a canonical one it contradicts) canonical again.
            status = parsed.status if content is not None else normalise_tags(tags).status
            if status:
                memory.status = status
        _reembed(memory)
        memory.save()
        _event(memory, actor, MemoryEvent.Action.UPDATED, content=content is not None, tags=tags is not None)
        return memory


def _reembed(memory: Memory) -> None:
    vector, model = _embed(memory.content)
    memory.embedding = vector
    memory.embedding_model = model
    _index(memory)


def memory_set_status(*, actor: Member, memory_id: Any, status: str) -> Memory:
    if status not in Status.values:
        raise MemoryInvalid('status must be "canonical", "draft" or "deprecated"')
    with transaction.atomic():
        memory = editable(actor, memory_id, change="status")
        previous = memory.status
        memory.status = status
        memory.save(update_fields=["status", "updated_at"])
        _event(memory, actor, MemoryEvent.Action.STATUS_CHANGED, status=status, previous=previous)
        return memory


def memory_forget(*, actor: Member, memory_id: Any) -> None:
    """Delete a memory permanently (its links go with it; its event history stays)."""
    with transaction.atomic():
        memory = editable(actor, memory_id, change="forget")
        _event(memory, actor, MemoryEvent.Action.DELETED)
        _drop_insights_quoting(memory, shared_too=memory.workspace == Workspace.COMPANY)
        if memory.workspace == Workspace.COMPANY:
            memory_proposals_withdraw(actor=actor, memory=memory, why="forgotten")
        memory.delete()


def _drop_insights_quoting(memory: Memory, *, shared_too: bool) -> None:
    """Delete the weekly insights that quote ``memory`` (its author's, and the shared layer's
    when it was shared): an insight is a snapshot, and a forgotten or un-shared memory's words
    must not go on being shown or mailed from it. The next week's run writes a fresh one."""
    whose = Q(member_id=memory.author_id)
    if shared_too:
        whose |= Q(member__isnull=True)
    quoting = MemoryInsight.objects.filter(whose).annotate(as_text=Cast("summary", TextField()))
    quoting.filter(as_text__contains=str(memory.pk)).delete()


def memory_share(*, actor: Member, memory_id: Any, workspace: str) -> tuple[Memory, int]:
    """Move a memory to ``workspace`` (share to ``company`` or back to ``personal``).

    The one memory moves, never a copy; its author stays. Links whose other memory stays
    in the old layer are removed (links never cross layers); returns (memory, links removed).
    Un-sharing is for the author or an admin; only the author's own memory can be shared.
    """
    target = workspace_value(workspace)
    if target is None:
        raise MemoryInvalid('workspace must be "personal" or "company"')
    with transaction.atomic():
        current = Memory.objects.visible_to(actor).get_by_id(memory_id)
        if current.workspace == target:
            # Nothing to move: no lock, and no ``memory.admin_share`` audit of a change not made.
            if not may_change(actor, current):
                raise PermissionDenied("only the author or an admin may change a shared memory")
            return current, 0
        memory = editable(actor, memory_id, change="share")
        if memory.workspace == target:  # moved there meanwhile
            return memory, 0
        if target == Workspace.COMPANY and memory.author_id != actor.pk:
            raise PermissionDenied("only the author may share a memory")
        if target == Workspace.PERSONAL and memory.author.offboarded_at is not None:
            # Their personal layer is gone: un-shared, it would be nobody's to see or forget.
            raise MemoryInvalid("its author has left: keep it shared, or forget it")
        crossing = MemoryLink.objects.filter(from_memory=memory).exclude(to_memory__workspace=target) | (
            MemoryLink.objects.filter(to_memory=memory).exclude(from_memory__workspace=target)
        )
        removed, _ = crossing.delete()
        if target == Workspace.PERSONAL:
            _drop_insights_quoting(memory, shared_too=True)  # the shared insight quoted it to everyone
            memory_proposals_withdraw(actor=actor, memory=memory, why="un-shared")
        source_layer = memory.workspace
        memory.workspace = target
        memory.save(update_fields=["workspace", "updated_at"])
        action = MemoryEvent.Action.SHARED if target == Workspace.COMPANY else MemoryEvent.Action.UNSHARED
        _event(memory, actor, action, previous=source_layer, links_removed=removed)
        return memory, removed


def memory_link(*, actor: Member, from_id: Any, to_id: Any, type: str = LinkType.RELATES_TO) -> MemoryLink:
    """Draw an explicit link; both memories must be visible, in the same layer, and not the same."""
    if type not in LinkType.values:
        raise MemoryInvalid(f"type must be one of {', '.join(LinkType.values)}")
    with transaction.atomic():
        # Both ends locked, in id order: a link drawn while either end changes layer waits for
        # that change and then sees the new layer (locking the source alone let a link cross
        # layers), and two links drawn between one pair in opposite directions wait, not deadlock.
        _lock_in_id_order(actor, [from_id, to_id])
        source = editable(actor, from_id)
        target = Memory.objects.visible_to(actor).get_by_id(to_id)
        if source.pk == target.pk:
            raise MemoryInvalid("a memory cannot link to itself")
        if source.workspace != target.workspace:
            raise MemoryInvalid("links stay within one layer: both memories must be personal or both shared")
        link, _ = MemoryLink.objects.get_or_create(
            from_memory=source, to_memory=target, type=type, defaults={"provenance": Provenance.EXPLICIT}
        )
        return link


def _lock_in_id_order(actor: Member, memory_ids: list[Any]) -> None:
    """Lock the memories of ``memory_ids`` that ``actor`` can see, lowest id first (in the
    caller's transaction). A malformed id locks nothing: the lookups after it answer it as missing."""
    try:
        visible = Memory.objects.visible_to(actor).filter(pk__in=memory_ids).order_by("pk")
        list(visible.select_for_update(of=("self",)).values_list("pk", flat=True))
    except (ValidationError, ValueError, TypeError):
        return


def memory_unlink(*, actor: Member, from_id: Any, to_id: Any, type: str | None = None) -> int:
    """Remove the links from one memory to another (of one type, or all); returns how many."""
    with transaction.atomic():
        source = editable(actor, from_id)
        target = Memory.objects.visible_to(actor).get_by_id(to_id)
        links = MemoryLink.objects.filter(from_memory=source, to_memory=target)
        if type is not None:
            links = links.filter(type=type)
        removed, _ = links.delete()
        return removed


def memory_backfill_embeddings(*, seconds: float = 120.0) -> int:
    """Embed memories stored while the embedder was down, or embedded by a model no longer
    configured (recall ignores those until then); returns how many were written."""
    return refresh_stale_vectors(Memory, text_field="content", embed_input=duplicate_text, seconds=seconds)


# --------------------------------------------------------------------------- people leaving


def api_tokens_revoke_all(*, member: Member) -> int:
    """Revoke every live personal token of ``member`` (suspension); returns how many.

    Called inside the caller's transaction by ``accounts.services``; a revoked token never
    works again, even after the member is reactivated.
    """
    from memory.models import MemoryApiToken

    return MemoryApiToken.objects.filter(member=member, revoked_at__isnull=True).update(revoked_at=timezone.now())


def inbound_addresses_retire(*, member: Member) -> int:
    """Retire the member's inbound mail address (suspension): like a revoked token, it never comes
    back by itself; the member turns mail capture on again for a new one."""
    return MemoryPreference.objects.filter(member=member, inbound_token__isnull=False).update(inbound_token=None)


def personal_layer_delete(*, member: Member) -> int:
    """Delete ``member``'s whole personal layer when they leave; returns how many memories went.

    Their memories in the personal layer (with their links), their tokens, their memory
    settings and their personal capsule revision are deleted. What they shared stays in the
    company layer. The append-only event history keeps one ``deleted`` event per memory, as
    a forget does (events never hold content).
    """
    from memory.models import CalendarSubscription, MemoryApiToken, PromptCapsuleRevision, VaultImport

    with transaction.atomic():
        personal = Memory.objects.filter(author=member, workspace=Workspace.PERSONAL)
        ids = list(personal.values_list("pk", flat=True))
        MemoryEvent.objects.bulk_create(
            MemoryEvent(memory_id=pk, actor=member, action=MemoryEvent.Action.DELETED, workspace=Workspace.PERSONAL,
                        metadata={"reason": "offboarded"})
            for pk in ids
        )  # fmt: skip
        personal.delete()
        MemoryApiToken.objects.filter(member=member).delete()
        MemoryPreference.objects.filter(member=member).delete()
        PromptCapsuleRevision.objects.filter(layer=f"personal:{member.pk}").delete()
        # Their weekly insights quote their personal memories, and their calendar feeds are
        # theirs (a private feed's URL is its key): the personal layer includes both.
        MemoryInsight.objects.filter(member=member).delete()
        CalendarSubscription.objects.filter(member=member).delete()
        # Their imports too: a queued one holds their notes, a finished one their note names.
        # A worker still running one loses its row (its lease) and stores nothing.
        VaultImport.objects.filter(member=member).delete()
    return len(ids)


def personal_layer_count(member: Member) -> int:
    """How many memories ``member`` holds in their personal layer."""
    return Memory.objects.filter(author=member, workspace=Workspace.PERSONAL).count()
