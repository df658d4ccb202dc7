"""What both vault importers share: safe paths, the plan of notes, the check that refuses a
whole import before anything is stored, storing through the memory services, and the report.

An import is **all or nothing**. Every note is checked first — its path, its size, its
front matter, the secret detector over its text and tags, the length of its origin key —
and one bad note refuses the whole import with every problem named (``ImportRefused``),
before a single memory is written. The notes are then stored one by one through
``memory_capture_from`` (idempotent by origin) inside one transaction, so a failure while
storing (a concurrent import of the same origin, the database going away) rolls back every
note of this import, and the links are drawn only after every note has its memory.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction

from brain.domain import DomainError
from brain.text.secrets import redact, refuse
from brain.zips import entry_path_problem
from grants.models import Member
from memory.classify import MemoryInvalid, normalise_tags
from memory.models import Memory, MemoryLink
from memory.services import (
    MAX_CONTENT,
    member_still_here,
    memory_capture_from,
    memory_link,
    memory_set_status,
    memory_update,
    workspace_value,
)

# Told how many notes an import is about to store (see ``store_plan``).
Charge = Callable[[int], None]
# Told, after each note is stored, how many of how many are (see ``store_plan``).
Progress = Callable[[int, int], None]
MAX_NOTES = 5_000
MAX_ORIGIN = 300  # Memory.origin's length
MAX_PATH = 1_000
SHOWN_PROBLEMS = 3  # how many problems the exception message itself names (all are in .problems)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ImportRefused(MemoryInvalid):
    """Nothing was imported; ``problems`` names every bad note or entry (``"<path>: <rule>"``)."""

    def __init__(self, problems: list[str]) -> None:
        # A problem names its note by path, and a file's name may itself be a key: masked here,
        # once, for every place that shows them (the REST answer, the web page, the job's record).
        self.problems = [redact(problem) for problem in problems]
        problems = self.problems
        shown = "; ".join(problems[:SHOWN_PROBLEMS])
        more = f" (and {len(problems) - SHOWN_PROBLEMS} more)" if len(problems) > SHOWN_PROBLEMS else ""
        super().__init__(f"nothing was imported: {shown}{more}")


def shown_path(path: str) -> str:
    """A path as a message may show it: control characters (NUL included) as ``?``."""
    return _CONTROL.sub("?", path)[:MAX_PATH]


def path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe relative POSIX path, or None. Rejected, never repaired."""
    return entry_path_problem(path, max_length=MAX_PATH)


@dataclass
class PlannedNote:
    """One memory an import means to write: what the services will be given, and its links.

    ``key`` is how links name the note (a vault path, a Notion page id); ``label`` is what a
    report or a refusal shows; ``links`` are (target key, link type) pairs, resolved against
    the other notes of the same import; ``brain_id`` is the memory an exported note came from;
    ``workspace`` is the layer an exported note was in (a memory updated in place keeps its own).
    """

    key: str
    label: str
    origin: str
    content: str
    tags: list[str] = field(default_factory=list)
    status: str | None = None
    kind: str | None = None
    occurred_at: dt.datetime | None = None
    brain_id: uuid.UUID | None = None
    links: list[tuple[str, str]] = field(default_factory=list)
    workspace: str | None = None  # its own layer, used when the import names none


@dataclass(frozen=True)
class NoteResult:
    label: str
    outcome: str  # stored | flagged | duplicate | updated | unchanged
    memory_id: str


@dataclass(frozen=True)
class Skipped:
    label: str
    reason: str


@dataclass
class ImportReport:
    """What an import did, note by note, and what it left out and why."""

    source: str
    notes: list[NoteResult] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    other_files: int = 0  # files that are not notes (attachments, canvases, …): never read
    ignored_fields: Counter[str] = field(default_factory=Counter)  # front-matter keys not mapped
    links_created: int = 0
    links_existing: int = 0
    links_missing: int = 0  # targets that are not a note of this import
    links_skipped: int = 0  # both ends imported, but not linkable (another layer, not yours)

    @property
    def outcomes(self) -> dict[str, int]:
        return dict(Counter(result.outcome for result in self.notes))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImportReport:
        """The report ``as_dict`` wrote (a background import keeps its report as JSON)."""
        links = data.get("links", {})
        return cls(
            source=data.get("source", ""),
            notes=[NoteResult(n["path"], n["outcome"], n["id"]) for n in data.get("notes", [])],
            skipped=[Skipped(s["path"], s["reason"]) for s in data.get("skipped", [])],
            other_files=data.get("other_files", 0),
            ignored_fields=Counter(data.get("ignored_fields", {})),
            links_created=links.get("created", 0),
            links_existing=links.get("existing", 0),
            links_missing=links.get("missing", 0),
            links_skipped=links.get("skipped", 0),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "outcomes": self.outcomes,
            "notes": [{"path": r.label, "outcome": r.outcome, "id": r.memory_id} for r in self.notes],
            "skipped": [{"path": s.label, "reason": s.reason} for s in self.skipped],
            "other_files": self.other_files,
            "ignored_fields": dict(sorted(self.ignored_fields.items())),
            "links": {
                "created": self.links_created,
                "existing": self.links_existing,
                "missing": self.links_missing,
                "skipped": self.links_skipped,
            },
        }


def too_long(content: str) -> str | None:
    """The skip reason for a note whose memory would be over the content limit, or None."""
    if len(content) > MAX_CONTENT:
        return f"over {MAX_CONTENT:,} characters (the memory limit); not imported"
    return None


def note_problems(note: PlannedNote) -> list[str]:
    """Every reason the services would refuse ``note``, checked without writing anything.

    The same checks the capture path runs (the secret detector and NUL refusal on content,
    tags and origin; tag rules), so storing cannot fail on what this let through.
    """
    problems: list[str] = []
    if not note.content.strip():
        problems.append(f"{note.label}: the note is empty")
    try:
        refuse(note.content, field="text")
        normalise_tags(note.tags, note.content)
    except DomainError as refused:
        problems.append(f"{note.label}: {refused}")
    if len(note.origin) > MAX_ORIGIN:
        problems.append(f"{note.label}: the path is too long to be remembered as an origin (≤ {MAX_ORIGIN})")
    else:
        try:
            refuse(note.origin, field="path")
        except DomainError as refused:
            problems.append(f"{note.label}: {refused}")
    return problems


def check_plan(notes: list[PlannedNote], problems: list[str]) -> None:
    """Raise ``ImportRefused`` with ``problems`` and every note's problems, if there are any."""
    if len(notes) > MAX_NOTES:
        # Refused whatever else is wrong: scanning every note of an oversized vault first
        # cost minutes (the notes are not what will be fixed).
        problems.append(f"{len(notes):,}+ notes: an import takes at most {MAX_NOTES:,}; import the vault in parts")
        raise ImportRefused(problems)
    for note in notes:
        problems.extend(note_problems(note))
    if problems:
        raise ImportRefused(problems)


def store_plan(
    *,
    actor: Member,
    notes: list[PlannedNote],
    source: str,
    workspace: str | None,
    report: ImportReport,
    charge: Charge | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Store every planned note, then draw their links; one transaction, all or nothing.

    ``charge`` is told how many notes are about to be stored (each is embedded) once they
    all passed the checks and before anything is written; it may refuse by raising (a rate
    limit). ``progress`` is told ``(stored, of)`` before the first note and after each one
    (a background import reports it; raising stops the import, and nothing of it stays). A
    failure while storing is an ``ImportRefused`` naming the note, and nothing of this
    import stays.
    """
    layer = workspace_value(workspace)
    if charge is not None and notes:
        charge(len(notes))
    with transaction.atomic():
        stored: dict[str, Memory] = {}
        if progress is not None:
            progress(0, len(notes))
        for done, note in enumerate(notes, start=1):
            try:
                outcome, memory = _store_one(actor, note, source, layer or note.workspace)
            except (DomainError, PermissionDenied, Memory.DoesNotExist) as failed:
                if not member_still_here(actor):
                    raise ImportRefused([GONE]) from None  # said once, not as this note's fault
                raise ImportRefused([f"{note.label}: {failed}"]) from None
            stored[note.key] = memory
            report.notes.append(NoteResult(note.label, outcome, str(memory.pk)))
            if progress is not None:
                progress(done, len(notes))
        _link_all(actor, notes, stored, report, progress)
        # Suspending or offboarding locks the member row; taking it here makes the two take
        # turns. An import that ran while its person was offboarded would otherwise commit
        # personal memories after the offboarding deleted the layer (a background import
        # runs for minutes, long after its request checked the person was active).
        if not member_still_here(actor, lock=True):
            raise ImportRefused([GONE])
    return report


GONE = "your account was suspended or offboarded while the import ran; nothing was imported"


def _store_one(actor: Member, note: PlannedNote, source: str, workspace: str | None) -> tuple[str, Memory]:
    if note.brain_id is not None:
        own = Memory.objects.filter(author=actor, pk=note.brain_id).first()
        if own is not None:
            return _update_exported(actor, own, note)
        # Not a memory this member wrote (another account's export, or forgotten since):
        # an ordinary note, keyed by its origin. Which of the two it was is not said.
    capture = memory_capture_from(
        actor=actor, origin=note.origin, content=note.content, source=source, tags=note.tags,
        workspace=workspace, kind=note.kind, occurred_at=note.occurred_at,
    )  # fmt: skip
    memory, outcome = capture.memory, capture.outcome
    # The capture path sets status only at first capture (from a status: tag) and never on
    # an update; the note's own status is applied explicitly, and only when the note has one.
    # A note held as a draft (it contradicts a canonical memory) stays one, as a direct capture does.
    held = capture.contradiction_outcome == "held" and note.status == "canonical"
    if note.status and outcome != "duplicate" and memory.status != note.status and not held:
        memory = memory_set_status(actor=actor, memory_id=memory.pk, status=note.status)
        outcome = "updated" if outcome == "unchanged" else outcome
    return outcome, memory


def _update_exported(actor: Member, own: Memory, note: PlannedNote) -> tuple[str, Memory]:
    """A note exported from this member's memory: update that memory in place, or leave it.

    Tags are added, never removed (a tag added in the brain since the export stays), as an
    origin re-import does; kind and occurred time are kept as stored.
    """
    parsed = normalise_tags(note.tags, note.content)
    merged = list(dict.fromkeys([*own.tags, *parsed.tags]))[:64]
    outcome, memory = "unchanged", own
    # The note's text reached us with its line breaks read as "\n"; a memory written with
    # "\r\n" is the same text.
    stored = own.content.replace("\r\n", "\n").replace("\r", "\n")
    if stored != note.content.strip() or own.tags != merged:
        memory = memory_update(actor=actor, memory_id=own.pk, content=note.content, tags=merged)
        outcome = "updated"
    if note.status and memory.status != note.status:
        memory = memory_set_status(actor=actor, memory_id=memory.pk, status=note.status)
        outcome = "updated"
    return outcome, memory


def _link_all(
    actor: Member,
    notes: list[PlannedNote],
    stored: dict[str, Memory],
    report: ImportReport,
    progress: Progress | None = None,
) -> None:
    """Draw each note's links between the memories this import stored or found.

    An existing link (drawn by an earlier import, by hand, or inferred by the capture
    pipeline with the same type) is counted, never drawn twice, so a re-import adds none.
    Both ends must be the importer's own memories in one layer (links never cross layers);
    a note that came back as a duplicate of a teammate's shared memory is not linked from.
    ``progress`` is told ``(all, all)`` after each note's links: drawing 50,000 links takes
    minutes, and a background import's lease must not run out meanwhile.
    """
    for note in notes:
        if progress is not None:
            progress(len(notes), len(notes))
        source = stored.get(note.key)
        for target_key, link_type in dict.fromkeys(note.links):
            target = stored.get(target_key)
            if source is None or target is None:
                report.links_missing += 1
                continue
            if source.pk == target.pk:
                continue
            if source.author_id != actor.pk or target.author_id != actor.pk or source.workspace != target.workspace:
                report.links_skipped += 1
                continue
            if MemoryLink.objects.filter(from_memory=source, to_memory=target, type=link_type).exists():
                report.links_existing += 1
                continue
            memory_link(actor=actor, from_id=source.pk, to_id=target.pk, type=link_type)
            report.links_created += 1
