"""The durable build driver: import builds drafted in leased, idempotent steps.

Contract:
- ``import_job_create`` validates every file up front (nothing is drafted if one is
  invalid), opens an import build and stores the files as job items in Postgres, then
  enqueues the first step after commit.
- ``job_step(job_id)`` claims the job's lease with a conditional UPDATE that must change
  exactly one row, drafts one batch of items in one transaction (embedding the batch's
  new chunks in one call), and releases the lease in that same transaction — after
  checking it still holds it. A worker killed mid-step rolls its transaction back and
  leaves an expired lease behind.
- ``jobs_sweep()`` (Celery beat, every minute) re-enqueues any unfinished job whose lease
  is free or expired. Steps are idempotent, so a duplicate enqueue is harmless.
- When every item is drafted the build is submitted for review: a person still has to
  promote it.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from brain.domain import DomainError
from brain.jobs import enqueue_on_commit, resend_lost
from brain.leases import Lease, lease_claim, lease_finish
from brain.text.secrets import NulRefused, SecretRefused, mask, redact
from brain.zips import directory_problem, entry_name, entry_path_problem, finder_metadata, symbolic_link
from builds.models import Build, BuildChange, BuildJob, BuildJobItem
from builds.services import (
    ImportFileReport,
    ImportInvalid,
    acting_requester,
    build_open,
    build_write_page,
    validate_import_files,
)
from corpus.chunking import chunk_markdown
from corpus.export import ORIGINALS
from corpus.frontmatter import PageInvalid, Problem
from corpus.services import page_validate, store_chunks
from grants.models import Member
from grants.principals import Principal, SystemPrincipal

logger = logging.getLogger(__name__)


def driver_settings() -> dict[str, int]:
    defaults = {
        "BATCH_SIZE": 25,
        "LEASE_SECONDS": 300,
        "MAX_ZIP_BYTES": 50 * 1024 * 1024,
        "MAX_FILE_BYTES": 1024 * 1024,
        "MAX_FILES": 2000,
        "MAX_RETRIES": 10,
    }
    return {**defaults, **getattr(settings, "BRAIN_BUILD_DRIVER", {})}


# --------------------------------------------------------------------------- reading a tree


MAX_ENTRY_NAME = 1_000  # characters of an archive entry's name (page paths are at most 255)
MAX_SHOWN_NAME = 200  # of which an error repeats at most this many


class ArchiveRefused(DomainError, ValueError):
    """A folder or zip that cannot be imported as it is; the message says why."""

    code = "archive_refused"


def files_from_folder(root: Path) -> list[tuple[str, str]]:
    """Every ``*.md`` under ``root`` as (relative path, text). Raises ``ArchiveRefused``.

    A symbolic link on the way to a file is refused, naming it: a link to a file outside the
    folder (``topics/x.md -> ~/private.md``) published what the folder did not hold.
    """
    if not root.is_dir():
        raise ArchiveRefused(f"{root} is not a directory")
    limit = driver_settings()["MAX_FILE_BYTES"]
    files: list[tuple[str, str]] = []
    for file in sorted(root.rglob("*")):
        relative = file.relative_to(root).as_posix()
        if file.is_symlink() and (file.name.endswith(".md") or file.is_dir()):
            raise ArchiveRefused(f"{relative} is a symbolic link; copy what it points at instead")
        if file.is_symlink() or not file.name.endswith(".md") or not file.is_file():
            continue
        if file.stat().st_size > limit:
            raise ArchiveRefused(f"{relative} is larger than {limit} bytes")
        try:
            files.append((relative, file.read_text(encoding="utf-8-sig")))  # an editor's BOM is no text
        except (OSError, UnicodeDecodeError):
            raise ArchiveRefused(f"{relative} is not readable as UTF-8 text") from None
    return files


def _shown(info: zipfile.ZipInfo) -> str:
    """An entry's name as an error may repeat it: redacted whole, then cut (a key across the
    cut would otherwise be half shown)."""
    return redact(entry_name(info))[:MAX_SHOWN_NAME]


def _refuse_entry(info: zipfile.ZipInfo) -> None:
    """Refuse the archive for an entry that is not imported yet must not be passed over: an
    unsafe name (``../``, absolute, a backslash), a symbolic link, or a page file whose
    ``.md`` is not lower case — ignoring it would import the archive less that page, silently
    (an export's ``originals/`` keep their uploaded names: "Notes.MD" is no page). Other
    files (images, the export's originals) are left out, as they always were."""
    name = entry_name(info)
    if finder_metadata(name):
        return
    shown = _shown(info)
    problem = entry_path_problem(name.removesuffix("/") if info.is_dir() else name, max_length=MAX_ENTRY_NAME)
    if problem is not None:
        raise ArchiveRefused(f"{shown}: {problem}")
    if symbolic_link(info):
        raise ArchiveRefused(f"{shown} is a symbolic link; an import reads files only")
    if name.lower().endswith(".md") and not name.endswith(".md") and not name.startswith(ORIGINALS):
        raise ArchiveRefused(f"{shown}: a page file's name ends in .md, lower case (the name is the page path)")


def files_from_zip(data: bytes | IO[bytes]) -> list[tuple[str, str]]:
    """Every ``*.md`` member of a zip as (path, text), refusing bombs and oversized entries.

    ``data`` may be a file (an upload Django spooled to disk is read from there, never
    whole into memory). Sizes are checked from the central directory *and* while reading
    (a lying header cannot make us inflate more than the limits); a damaged member — a
    size or CRC that does not match — refuses the archive. Member names are page paths and
    are validated as written, never repaired: zipfile cuts a name at a NUL and we refuse
    that, as the path validator refuses ``//`` and ``.`` segments.
    """
    limits = driver_settings()
    stream = io.BytesIO(data) if isinstance(data, bytes) else data
    start = stream.tell()
    size = stream.seek(0, io.SEEK_END) - start
    stream.seek(start)
    if size > limits["MAX_ZIP_BYTES"]:  # every surface's limit, the API's included (the form had its own)
        raise ArchiveRefused(f"the archive is larger than {limits['MAX_ZIP_BYTES']} bytes")
    # Read from the end record before zipfile parses the directory (an object per entry): a
    # million entries naming one file cost 8 s and ~430 MB. Pages are at most MAX_FILES; the
    # rest (folders, images) may be many more, but not without bound.
    problem = directory_problem(stream, max_entries=10 * limits["MAX_FILES"])
    if problem is not None:
        raise ArchiveRefused(problem)
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise ArchiveRefused("the upload is not a valid zip archive") from None
    with archive:
        if any("\x00" in info.orig_filename for info in archive.infolist()):
            raise ArchiveRefused("a member name contains a NUL character (member names are page paths)")
        for info in archive.infolist():
            _refuse_entry(info)
        # macOS Finder's "Compress" adds an __MACOSX/ copy of every file's resource fork (binary,
        # "._name.md"): not a page (no page path starts so), and refusing it refused the archive.
        entries = [
            info for info in archive.infolist()
            if not info.is_dir() and info.filename.endswith(".md") and not finder_metadata(info.filename)
        ]  # fmt: skip
        if len(entries) > limits["MAX_FILES"]:
            # Every page is validated while the upload waits: 18,000 tiny pages (a 4 MB zip) ran
            # past the web worker's timeout and imported nothing.
            raise ArchiveRefused(
                f"the archive holds {len(entries)} pages; at most {limits['MAX_FILES']} an import "
                "(split it, or run corpus_import on the server)"
            )
        declared = sum(info.file_size for info in entries)
        if declared > limits["MAX_ZIP_BYTES"]:
            raise ArchiveRefused(f"the archive would expand to more than {limits['MAX_ZIP_BYTES']} bytes")
        files: list[tuple[str, str]] = []
        for info in entries:
            shown = _shown(info)
            if info.flag_bits & 0x1:
                raise ArchiveRefused(f"{shown} is encrypted")
            if info.file_size > limits["MAX_FILE_BYTES"]:
                raise ArchiveRefused(f"{shown} is larger than {limits['MAX_FILE_BYTES']} bytes")
            try:
                with archive.open(info) as member:
                    raw = member.read(limits["MAX_FILE_BYTES"] + 1)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, ValueError):
                raise ArchiveRefused(f"{shown} is damaged: its size or checksum does not match") from None
            if len(raw) > limits["MAX_FILE_BYTES"] or len(raw) != info.file_size:
                raise ArchiveRefused(f"{shown} does not expand to its declared size")
            try:
                text = raw.decode("utf-8-sig")  # a BOM was read as text: "frontmatter missing"
            except UnicodeDecodeError:
                raise ArchiveRefused(f"{shown} is not UTF-8 text") from None
            # The member name is the page path, exactly as written: validated, not repaired.
            files.append((entry_name(info), text))
    return files


# --------------------------------------------------------------------------- jobs


def _validate(requester: Principal, files: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The files that change a page: each must pass the write guards and the requester's
    ``suggest``; else ``ImportInvalid``. Files the same as the live page are left out."""
    pending, reports = validate_import_files(requester=requester, files=files, keep_unchanged=False)
    if reports:
        raise ImportInvalid(reports)
    return [(path, markdown) for path, markdown, _ in pending]


def import_job_create(*, requester: Principal, files: Iterable[tuple[str, str]], title: str) -> Build:
    """Validate, open an import build and queue its drafting. Raises ``ImportInvalid``."""
    files = list(files)
    valid = _validate(requester, files)
    if not valid:
        unchanged = "nothing in it changes a page (each is the same as the live one)"
        reason = unchanged if files else "there are no .md files to import"
        raise ImportInvalid([ImportFileReport("(import)", [Problem("files", reason)])])
    with transaction.atomic():
        build = build_open(actor=requester, title=title, kind=Build.Kind.IMPORT)
        job = BuildJob.objects.create(build=build, kind=BuildJob.Kind.IMPORT)
        BuildJobItem.objects.bulk_create(
            [BuildJobItem(job=job, ordinal=index, path=path, content=text) for index, (path, text) in enumerate(valid)],
            batch_size=1000,
        )
        enqueue_on_commit("builds.job_step", job.pk)
    return build


def reembed_job_create(*, requester: Principal, everything: bool = False) -> Build:
    """Open a re-embedding build over every chunk whose vector was not made by the current model.

    ``everything`` re-embeds all chunks. Chunk text never changes, so no page changes and
    there is nothing for a person to approve: the build is promoted by the system when
    its last batch is written, and the promotion record says how many vectors changed.
    """
    from brain import embeddings
    from corpus.models import Chunk

    if not isinstance(requester, Member | SystemPrincipal) or (
        isinstance(requester, Member) and not requester.is_administrator
    ):
        raise PermissionDenied("only an owner or admin may re-embed the corpus")
    model = embeddings.model_id()
    chunks = Chunk.objects.order_by("id")
    if not everything:
        chunks = chunks.exclude(embedding_model=model)
    ids = list(chunks.values_list("id", flat=True))
    batch = driver_settings()["BATCH_SIZE"] * 4
    with transaction.atomic():
        build = build_open(actor=requester, title=f"Re-embed {len(ids)} chunks with {model}", kind=Build.Kind.REEMBED)
        job = BuildJob.objects.create(build=build, kind=BuildJob.Kind.REEMBED)
        BuildJobItem.objects.bulk_create(
            [
                BuildJobItem(job=job, ordinal=index, content="\n".join(ids[start : start + batch]))
                for index, start in enumerate(range(0, len(ids), batch))
            ]
        )
        enqueue_on_commit("builds.job_step", job.pk)
    return build


def _reembed_items(items: list[BuildJobItem]) -> int:
    from brain import embeddings
    from corpus.chunking import ChunkText
    from corpus.models import Chunk

    ids = [chunk_id for item in items for chunk_id in item.content.split("\n") if chunk_id]
    chunks = list(Chunk.objects.filter(id__in=ids).select_for_update())
    vectors = embeddings.embed([ChunkText(c.heading_path, c.body).embedding_input for c in chunks])
    model = embeddings.model_id()
    for chunk, vector in zip(chunks, vectors, strict=True):
        chunk.embedding = vector
        chunk.embedding_model = model
    Chunk.objects.bulk_update(chunks, ["embedding", "embedding_model"], batch_size=500)
    return len(chunks)


def _finish_reembed(build: Build) -> None:
    from builds.models import Promotion

    locked = Build.objects.select_for_update().get(pk=build.pk)
    if locked.is_terminal:
        return
    total = sum(
        len([i for i in item.content.split("\n") if i]) for item in BuildJobItem.objects.filter(job__build=locked)
    )
    Promotion.objects.create(
        build=locked,
        approver=None,
        approver_label="system",
        note=f"re-embedded {total} chunk vectors; no page content changed",
        approved=[],
    )
    locked.status = Build.Status.PROMOTED
    locked.finished_at = timezone.now()
    locked.save(update_fields=["status", "finished_at", "updated_at"])


def _claim(job_id: int, lease_seconds: int) -> Lease | None:
    """The lease of a pending job, or of a running one between steps or whose worker died."""
    return lease_claim(
        BuildJob, job_id, waiting=Q(state=BuildJob.State.PENDING), running=Q(state=BuildJob.State.RUNNING),
        take={"state": BuildJob.State.RUNNING, "updated_at": timezone.now()},
        duration=dt.timedelta(seconds=lease_seconds),
    )  # fmt: skip


def job_step(job_id: int) -> str:
    """Run one step of job ``job_id``: ``"busy"``, ``"progress"``, ``"done"``, ``"failed"`` or ``"gone"``."""
    config = driver_settings()
    if not BuildJob.objects.filter(pk=job_id).exists():
        return "gone"
    lease = _claim(job_id, config["LEASE_SECONDS"])
    if lease is None:
        return "busy"
    job = BuildJob.objects.select_related("build").get(pk=job_id)
    if job.attempts - job.steps_done > config["MAX_RETRIES"]:
        # Every claim counts an attempt and every finished step a step: the difference is the
        # claims that died or raised. A step that keeps failing stops here, and says so.
        _fail(job, f"a step failed {config['MAX_RETRIES']} times; the worker log has the reason")
        return "failed"
    try:
        with transaction.atomic():
            items = list(
                BuildJobItem.objects.select_for_update()
                .filter(job=job, done=False)
                .order_by("ordinal")[: config["BATCH_SIZE"]]
            )
            if items and job.kind == BuildJob.Kind.REEMBED:
                _reembed_items(items)
            elif items:
                requester = acting_requester(job.build)
                documents = [page_validate(actor=requester, path=item.path, markdown=item.content) for item in items]
                # One embedder call for the whole batch, then the drafts reuse the stored chunks.
                store_chunks(chunk for document in documents for chunk in chunk_markdown(document.body))
                for item, document in zip(items, documents, strict=True):
                    build_write_page(build=job.build, path=item.path, markdown=item.content, document=document)
            BuildJobItem.objects.filter(pk__in=[item.pk for item in items]).update(done=True)
            remaining = BuildJobItem.objects.filter(job=job, done=False).exists()
            if not remaining:
                if job.kind == BuildJob.Kind.REEMBED:
                    _finish_reembed(job.build)
                else:
                    _submit_when_drafted(job.build)
            released = lease_finish(
                lease,
                state=BuildJob.State.RUNNING if remaining else BuildJob.State.DONE,
                steps_done=F("steps_done") + 1,
                updated_at=timezone.now(),
            )
            if not released:
                # Our lease expired and another worker took over: undo this batch.
                raise _LeaseLost
            if remaining:
                enqueue_on_commit("builds.job_step", job.pk)
    except _LeaseLost:
        logger.warning("build job %s: lease lost, batch rolled back", job_id)
        return "busy"
    except (PageInvalid, SecretRefused, NulRefused) as exc:
        _fail(job, mask(f"a file no longer validates: {exc}")[0])
        return "failed"
    except (PermissionDenied, ValidationError, ObjectDoesNotExist) as exc:
        # The world changed under the job (a grant revoked, a page moved): retrying cannot
        # help, so the build says so instead of waiting for a sweep forever.
        reason = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        _fail(job, mask(f"the build can no longer be drafted as its requester: {reason}")[0])
        return "failed"
    return "progress" if remaining else "done"


class _LeaseLost(Exception):
    pass


def _submit_when_drafted(build: Build) -> None:
    locked = Build.objects.select_for_update().get(pk=build.pk)
    if locked.status == Build.Status.OPEN and BuildChange.objects.filter(build=locked).exists():
        locked.status = Build.Status.AWAITING_REVIEW
        locked.submitted_at = timezone.now()
        locked.save(update_fields=["status", "submitted_at", "updated_at"])


def _fail(job: BuildJob, message: str) -> None:
    with transaction.atomic():
        BuildJob.objects.filter(pk=job.pk).update(
            state=BuildJob.State.FAILED, error=message[:2000], lease_token=None, lease_expires_at=None
        )
        build = Build.objects.select_for_update().get(pk=job.build_id)
        if not build.is_terminal:
            build.status = Build.Status.FAILED
            build.finished_at = timezone.now()
            build.save(update_fields=["status", "finished_at", "updated_at"])


def jobs_sweep() -> int:
    """Re-enqueue unfinished jobs whose worker died (lease expired) and, when the queue is
    idle, those waiting for a step message that never arrived; returns how many."""
    return resend_lost(
        "builds.job_step",
        BuildJob.objects.filter(state__in=[BuildJob.State.PENDING, BuildJob.State.RUNNING]),
        died=Q(lease_expires_at__lt=timezone.now()),
        never_started=Q(lease_expires_at__isnull=True),
    )


def job_progress(build: Build) -> tuple[int, int]:
    """(items drafted, items in total) of a build's job."""
    job = BuildJob.objects.filter(build=build).first()
    if job is None:
        return 0, 0
    return job.items.filter(done=True).count(), job.items.count()
