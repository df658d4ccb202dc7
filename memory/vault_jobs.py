"""Large vault and Notion imports, run by a worker instead of the web request.

Storing a note embeds it and checks it against its neighbours (~65 ms a note here), so a
5,000-note vault takes minutes: longer than a proxy waits for an answer, and a web worker
held all that time. An import whose zip holds more than ``BRAIN_IMPORT_BACKGROUND_NOTES``
notes therefore becomes a ``VaultImport`` row (a durable job, ``brain.jobs``):

1. ``vault_import_queue`` — in the request: the kind, vault name and layer are checked, the
   notes the zip holds are counted in the member's ``import`` window, and the zip is stored
   with the row; the Celery message (the row's id) is sent once that commits. One import at
   a time per member (``ImportBusy`` otherwise).
2. ``vault_import_run`` — a worker takes the row's lease and runs the very import a request
   runs (every note checked first, then stored in one transaction: all or nothing). While
   its transaction is open it writes ``notes_done`` of ``notes_total`` and pushes its lease
   out on a second connection (``brain.side_connection``), so the person's page shows
   progress and the sweep knows it is alive. It finishes ``done`` with the report,
   ``refused`` with every problem (nothing stored), or ``failed`` (over its time, or killed
   ``MAX_ATTEMPTS`` times); the zip is dropped either way.
3. ``vault_imports_sweep`` — beat, every minute: an import whose worker died (lease expired)
   is sent again at once, one never picked up when the queue is idle; finished rows older
   than ``KEEP_FINISHED`` are deleted.

Smaller imports still run in the request and answer with their report at once.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import time
import uuid
import zipfile
from dataclasses import dataclass
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError, IntegrityError, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q
from django.utils import timezone

from brain.domain import DomainError
from brain.jobs import enqueue_on_commit, resend_lost
from brain.leases import Lease, lease_claim, lease_expired, lease_finish, lease_holds
from brain.side_connection import side_connection
from brain.text.secrets import find as find_secrets
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.models import VaultImport
from memory.services import workspace_value
from memory.vaults import ImportRefused, ImportReport, obsidian_import
from memory.vaults.common import Charge, Progress
from memory.vaults.notion import MAX_ROWS, notion_files, notion_import_files
from memory.vaults.obsidian import VAULT_NAME, is_note, vault_files_from_zip

logger = logging.getLogger(__name__)

# A live worker pushes its lease out every PROGRESS_SECONDS at most (and at least once per
# note stored); reading and checking 5,000 notes before the first is stored takes well under
# LEASE. A worker silent for LEASE has died, and the sweep sends the import again.
LEASE = dt.timedelta(minutes=5)
PROGRESS_SECONDS = 2.0
# Celery's limits for one run (``memory.vault_import``): 5,000 notes take ~6 minutes here.
SOFT_TIME_LIMIT = 30 * 60
NEVER_STARTED = dt.timedelta(minutes=2)
MAX_ATTEMPTS = 3
KEEP_FINISHED = dt.timedelta(days=30)
# How long a worker without a free import slot waits before it tries again.
WAIT_SECONDS = 30
# The advisory-lock class of the import slots (pg_try_advisory_lock(class, slot)): "bV".
SLOT_LOCK_CLASS = 0x6256

TIMED_OUT = (
    f"the import did not finish within {SOFT_TIME_LIMIT // 60} minutes and nothing was imported; "
    "import the vault in smaller parts"
)
KILLED = (
    f"the import was stopped {MAX_ATTEMPTS} times before it finished (its worker was restarted or ran out "
    "of memory) and nothing was imported; import the vault in smaller parts"
)


class ImportBusy(DomainError):
    """The member already has an import queued or running."""

    code = "conflict"
    status = 409


class LeaseLost(Exception):
    """Another worker took the import over: this one must store nothing."""


# --------------------------------------------------------------------------- the import itself


@dataclass
class Upload:
    """A zip as a request read it (``upload_read``): what an import needs, and how many notes.

    ``files``: Obsidian — every vault path (the zipped folder cut off), notes inflated, other
    files as ``b""``; Notion — its pages and tables. ``notes``: the memories it would store at
    most (a Notion table counts its rows, up to the per-table limit).
    """

    kind: str
    files: dict[str, bytes]
    folder: str | None = None  # Obsidian: the folder it was zipped in
    other_files: int = 0  # Notion: files that are not pages or tables (never read)
    notes: int = 0


def upload_read(kind: str, archive: bytes | IO[bytes]) -> Upload:
    """Read an uploaded zip as the import would: ``ImportRefused`` names every unsafe entry,
    bomb or damaged file now, before anything is queued or stored; ``MemoryInvalid`` for a kind
    that is neither."""
    if kind == VaultImport.Kind.OBSIDIAN:
        files, folder = vault_files_from_zip(archive)
        return Upload(kind, files, folder=folder, notes=sum(1 for path in files if is_note(path)))
    if kind == VaultImport.Kind.NOTION:
        files, others = notion_files(archive)
        pages = sum(1 for path in files if path.lower().endswith(".md"))
        rows = sum(min(MAX_ROWS, data.count(b"\n")) for path, data in files.items() if path.lower().endswith(".csv"))
        return Upload(kind, files, other_files=others, notes=pages + rows)
    raise MemoryInvalid("choose what the zip is: an Obsidian vault or a Notion export")


def in_background(upload: Upload) -> bool:
    """Whether ``upload`` is imported by a worker (more notes than ``BRAIN_IMPORT_BACKGROUND_NOTES``)."""
    return upload.notes > settings.BRAIN_IMPORT_BACKGROUND_NOTES


def run_import(
    *,
    actor: Member,
    upload: Upload,
    vault: str,
    workspace: str | None,
    charge: Charge | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import what ``upload_read`` read; all or nothing. The one entry point of the page, the
    API and the worker. ``vault`` "" means the zipped folder's name (else "vault"). Raises
    ``ImportRefused`` / ``MemoryInvalid`` as the importers do."""
    if upload.kind == VaultImport.Kind.OBSIDIAN:
        return obsidian_import(
            actor=actor, files=upload.files, vault=vault or upload.folder or "vault", workspace=workspace,
            charge=charge, progress=progress,
        )  # fmt: skip
    return notion_import_files(
        actor=actor, files=upload.files, other_files=upload.other_files, workspace=workspace, charge=charge,
        progress=progress,
    )  # fmt: skip


def _stored_zip(files: dict[str, bytes]) -> bytes:
    """The files an import reads, as the zip a queued import keeps (attachments never read are
    names only; fast compression: the request waits for it)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return buffer.getvalue()


def _stored_files(archive: bytes) -> dict[str, bytes]:
    """The files ``_stored_zip`` kept (written by us, from an upload already checked)."""
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        return {info.filename: opened.read(info) for info in opened.infolist()}


# --------------------------------------------------------------------------- queue, read


def vault_import_queue(
    *, actor: Member, upload: Upload, vault: str = "", workspace: str | None = None, charge: Charge
) -> VaultImport:
    """Store what ``upload_read`` read as a ``VaultImport`` and send it to a worker once this commits.

    Checked here: the member, the vault name, the layer (``MemoryInvalid``), no other import
    of theirs open (``ImportBusy``). ``charge`` is told how many notes it holds before
    anything is stored; it may refuse (a rate limit).
    """
    if not isinstance(actor, Member) or not actor.is_active:
        raise PermissionDenied("only an active member has memories")
    # Named by the caller or, without one, by the zip's top folder: either is checked now, not
    # by the worker after the upload was accepted (a quick import refuses it at once too).
    name = vault or upload.folder or ""
    if name and not VAULT_NAME.match(name):
        raise MemoryInvalid(
            'vault must be 1 to 64 letters, digits, spaces, "-", "_" or "." (it names the vault in every origin)'
        )
    layer = workspace_value(workspace)
    if _open_import(actor) is not None:
        raise ImportBusy(BUSY)
    charge(upload.notes)
    archive = _stored_zip(upload.files)
    try:
        with transaction.atomic():
            job = VaultImport.objects.create(
                member=actor, kind=upload.kind, vault=name, workspace=layer,
                archive=archive, archive_bytes=len(archive), notes_total=upload.notes,
                other_files=upload.other_files,
            )  # fmt: skip
            enqueue_on_commit("memory.vault_import", str(job.pk))
    except IntegrityError:  # another request queued one between the check and the insert
        raise ImportBusy(BUSY) from None
    return job


BUSY = "one of your imports is still running; wait for it to finish (its page shows how far it got)"


def _open_import(actor: Member) -> VaultImport | None:
    return VaultImport.objects.filter(member=actor, state__in=VaultImport.UNFINISHED).defer("archive").first()


def vault_import_get(actor: Member, job_id: Any) -> VaultImport:
    """The member's own import ``job_id`` (without its zip); ``VaultImport.DoesNotExist`` for
    anyone else's, a malformed id or a missing one alike."""
    try:
        key = uuid.UUID(str(job_id))
    except ValueError:
        raise VaultImport.DoesNotExist from None
    return VaultImport.objects.defer("archive").get(pk=key, member=actor)


def vault_imports_recent(actor: Member, limit: int = 5) -> list[VaultImport]:
    """The member's latest background imports, newest first (without their zips or reports)."""
    return list(VaultImport.objects.filter(member=actor).defer("archive", "report")[:limit])


def vault_import_dict(job: VaultImport) -> dict[str, Any]:
    """What the API answers about an import (the report once done, the problems once refused)."""
    return {
        "id": str(job.pk), "kind": job.kind, "state": job.state, "notes_total": job.notes_total,
        "notes_done": job.notes_done, "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "report": job.report if job.state == VaultImport.State.DONE else None,
        "problems": job.problems if job.state == VaultImport.State.REFUSED else [],
        "error": job.error,
    }  # fmt: skip


# --------------------------------------------------------------------------- the worker's part


class _Heartbeat:
    """Writes a running import's progress and pushes its lease out, on a side connection.

    The first call writes; later ones at most every ``PROGRESS_SECONDS`` (the import calls it
    per note stored and per note linked, so a long phase keeps the lease alive). Raises
    ``LeaseLost`` when the row no longer carries this worker's lease (another worker took it
    over, or the row is gone): the import's transaction then rolls back. A failing side
    connection is logged and the import goes on: correctness rests on the final lock of the
    row, this only reports progress and keeps the lease from expiring.
    """

    def __init__(self, side: BaseDatabaseWrapper, lease: Lease) -> None:
        self.side, self.lease = side, lease
        self.written: float | None = None
        table = side.ops.quote_name(VaultImport._meta.db_table)  # our own table's name; values are parameters
        self.sql = (
            f"UPDATE {table} SET notes_done = %s, notes_total = %s, lease_expires_at = %s, updated_at = %s"  # noqa: S608
            " WHERE id = %s AND lease_token = %s"
        )

    def __call__(self, done: int, total: int) -> None:
        moment = time.monotonic()
        if self.written is not None and moment - self.written < PROGRESS_SECONDS:
            return
        self.written = moment
        now = timezone.now()
        try:
            with self.side.cursor() as cursor:
                cursor.execute(self.sql, [done, total, now + LEASE, now, self.lease.pk, self.lease.token])
                held = cursor.rowcount == 1
        except DatabaseError as failed:
            logger.warning("vault import %s: progress not written (%s)", self.lease.pk, type(failed).__name__)
            self.side.close()  # the next call reconnects
            return
        if not held:
            raise LeaseLost


def _take_slot(side: BaseDatabaseWrapper) -> bool:
    """Whether this worker got one of ``BRAIN_IMPORT_CONCURRENCY`` import slots: a session
    advisory lock held by ``side`` until it closes — or until its process dies, so a killed
    worker never keeps a slot."""
    with side.cursor() as cursor:
        for slot in range(settings.BRAIN_IMPORT_CONCURRENCY):
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [SLOT_LOCK_CLASS, slot])
            if cursor.fetchone()[0]:
                return True
    return False


def _claim(job_id: Any) -> Lease | None:
    return lease_claim(
        VaultImport, job_id, waiting=Q(state=VaultImport.State.QUEUED), running=Q(state=VaultImport.State.RUNNING),
        take={"state": VaultImport.State.RUNNING, "updated_at": timezone.now()}, duration=LEASE,
    )  # fmt: skip


def _finish(lease: Lease, state: str, **fields: Any) -> bool:
    now = timezone.now()
    return lease_finish(lease, state=state, archive=b"", finished_at=now, updated_at=now, **fields)


def _without_secrets(problem: str) -> str:
    """A problem as it is kept for 30 days: a file name may itself be a token."""
    for finding in sorted(find_secrets(problem), key=lambda found: found.start, reverse=True):
        problem = f"{problem[: finding.start]}[secret removed]{problem[finding.end :]}"
    return problem


def vault_import_run(job_id: Any, *, timed_out: tuple[type[BaseException], ...] = ()) -> str:
    """Run import ``job_id``; returns ``done``, ``refused``, ``failed``, ``busy`` (finished, gone
    or held by a live worker), ``waiting`` (no import slot free: the caller tries again later)
    or ``lease-lost``.

    ``timed_out`` are the exceptions the task's soft time limit raises (Celery's
    ``SoftTimeLimitExceeded``): the import then fails at once, with nothing stored, rather
    than being tried again for as long. Other errors (the database gone) propagate: the
    row keeps its lease, and the sweep sends it again once the lease expires.
    """
    try:
        key = uuid.UUID(str(job_id))
    except ValueError:
        return "busy"
    with side_connection() as side:
        if not _take_slot(side):
            # Still waiting, not lost: the sweep leaves a row touched this recently alone.
            VaultImport.objects.filter(pk=key, state=VaultImport.State.QUEUED).update(updated_at=timezone.now())
            return "waiting"
        return _run_claimed(key, side, timed_out)


def _run_claimed(key: uuid.UUID, side: BaseDatabaseWrapper, timed_out: tuple[type[BaseException], ...]) -> str:
    lease = _claim(key)
    if lease is None:
        return "busy"
    job = VaultImport.objects.select_related("member").get(pk=key)
    if job.attempts > MAX_ATTEMPTS:
        _finish(lease, VaultImport.State.FAILED, error=KILLED)
        logger.warning("vault import %s failed: stopped %d times", key, MAX_ATTEMPTS)
        return "failed"
    upload = Upload(job.kind, _stored_files(bytes(job.archive)), other_files=job.other_files)
    try:
        with transaction.atomic():
            report = run_import(
                actor=job.member, upload=upload, vault=job.vault, workspace=job.workspace,
                progress=_Heartbeat(side, lease),
            )  # fmt: skip
            if not lease_holds(lease, lock=True):
                raise LeaseLost
            _finish(lease, VaultImport.State.DONE, report=report.as_dict(), notes_done=len(report.notes),
                    notes_total=len(report.notes), problems=[], error="")  # fmt: skip
    except LeaseLost:
        logger.warning("vault import %s: lease lost, nothing stored by this worker", key)
        return "lease-lost"
    except ImportRefused as refused:
        _finish(lease, VaultImport.State.REFUSED, problems=[_without_secrets(p) for p in refused.problems])
        return "refused"
    except (DomainError, PermissionDenied) as refused:  # a bad vault name, a member since deactivated
        _finish(lease, VaultImport.State.REFUSED, problems=[_without_secrets(str(refused))])
        return "refused"
    except timed_out:
        _finish(lease, VaultImport.State.FAILED, error=TIMED_OUT)
        logger.warning("vault import %s failed: over its time limit", key)
        return "failed"
    return "done"


def vault_imports_sweep() -> int:
    """Send again the imports whose worker died and, when the queue is idle, those never
    picked up; delete finished imports older than ``KEEP_FINISHED``. Returns how many were sent."""
    now = timezone.now()
    VaultImport.objects.exclude(state__in=VaultImport.UNFINISHED).filter(finished_at__lt=now - KEEP_FINISHED).delete()
    return resend_lost(
        "memory.vault_import",
        VaultImport.objects.all(),
        died=Q(state=VaultImport.State.RUNNING) & lease_expired(),
        never_started=Q(state=VaultImport.State.QUEUED, updated_at__lt=now - NEVER_STARTED),
    )
