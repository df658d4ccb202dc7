"""The one write path of document ingest: store the bytes, record the capture, extract.

``document_ingest`` validates and stores synchronously (size, type by content, the same
bytes stored once) and queues an ``Extraction``; ``extraction_run`` converts, masks
credentials, payment cards and bank identifiers in place with the scanner's ``mask()``,
and writes the capture's text and the extraction record in one transaction. Tasks carry
ids only; logs and audit carry counts, never text.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from brain import embeddings
from brain.domain import DATABASE_UNAVAILABLE, past_program_limits
from brain.jobs import enqueue_on_commit, resend_lost
from brain.leases import Lease, lease_claim, lease_expired, lease_finish, lease_holds
from brain.text.secrets import NulRefused, SecretRefused, mask, refuse_all, storable
from corpus.chunking import MAX_CHARS, chunk_markdown
from corpus.models import Source, SourceChunk
from corpus.sources import capture_key_assign, source_create
from grants.audit import audit_record
from grants.models import Member
from ingest.converters import ConversionFailed, Unsupported, convert, sniff
from ingest.models import Document, Extraction
from ingest.storage import original_store

logger = logging.getLogger(__name__)
LEASE = dt.timedelta(minutes=10)
INSERT_BATCH = 1000
KIND_OF_TYPE = {"vtt": Source.Kind.INTERVIEW, "srt": Source.Kind.INTERVIEW, "html": Source.Kind.WEB}


MAX_FILENAME = 255  # Document.filename; no file system holds a longer name
MAX_KEY = 200  # Source.key
MAX_TITLE = 300  # Source.title


def document_ingest(
    *,
    actor: Member,
    filename: str,
    data: bytes,
    key: str | None = None,
    title: str | None = None,
    category: str | None = None,
    sensitivity: str = "ordinary",
    enqueue: bool = True,
) -> Extraction:
    """Store a document and queue its extraction.

    The same bytes again return the capture the uploader can already read (no second copy,
    no second extraction). A capture of the same bytes they cannot read is never revealed —
    not by returning it, nor by a taken default key: they get a capture of their own (the
    stored original is shared, it is not copied).

    Raises ``ValidationError`` naming the problem (too large, unsupported type, bad key…),
    ``PermissionDenied`` without ``suggest`` on ``captures/<key>`` and ``StorageFull`` when
    the media storage has no room; nothing is stored then (no row, no partial file).
    """
    # Bounded before the secret detector reads them: a form may carry megabytes in a field.
    if len(filename) > MAX_FILENAME:
        raise ValidationError({"file": f"the file name is longer than {MAX_FILENAME} characters"})
    if key is not None and len(key) > MAX_KEY:
        raise ValidationError({"key": f"key is at most {MAX_KEY} characters"})
    title = title[:MAX_TITLE] if title else title  # stored cut to its column, as it always was
    try:
        refuse_all([("filename", filename), ("title", title), ("key", key)])
    except (SecretRefused, NulRefused) as refusal:
        raise ValidationError({refusal.field: str(refusal)}) from None
    limit = int(settings.BRAIN_INGEST_LIMITS["MAX_BYTES"])
    if len(data) > limit:
        raise ValidationError({"file": f"the file is {len(data):,} bytes; the limit is {limit:,}"})
    if not data:
        raise ValidationError({"file": "the file is empty"})
    digest = hashlib.sha256(data).hexdigest()
    existing = Document.objects.filter(sha256=digest, source__in=Source.objects.visible_to(actor, "read")).first()
    if existing is not None:
        return existing.extractions.order_by("-created_at").first()  # type: ignore[return-value]
    try:
        detected = sniff(data, filename)
    except Unsupported as exc:
        raise ValidationError({"file": f"unsupported file: {exc}"}) from exc
    # Never derived from the bytes, never the caller's key as it is: a taken key (someone's
    # capture of the same bytes, or of the same name) must not be observable.
    try:
        capture_key = capture_key_assign(key, actor=actor, default_prefix="uploads")
    except (SecretRefused, NulRefused) as refusal:
        raise ValidationError({refusal.field: str(refusal)}) from None
    storage_name = f"originals/{digest}"
    with transaction.atomic():
        source = source_create(
            actor=actor, key=capture_key, kind=KIND_OF_TYPE.get(detected, Source.Kind.DOCUMENT),
            title=(title or filename or capture_key)[:MAX_TITLE], text="", category=category, sensitivity=sensitivity,
            captured_at=timezone.now(),
        )  # fmt: skip
        # After the rows that check permissions, before the rest: a full disk (``StorageFull``)
        # rolls the capture back, and never leaves a partial file behind.
        original_store(storage_name, data)
        document = Document.objects.create(
            source=source, sha256=digest, storage_name=storage_name, size=len(data), detected_type=detected,
            filename=filename, uploaded_by=actor,
        )  # fmt: skip
        extraction = Extraction.objects.create(document=document, region=settings.BRAIN_PROCESSING_REGION)
        audit_record(actor=actor, action="ingest.upload", target_type="source", target=source.key,
                     metadata={"type": detected, "bytes": len(data)})  # fmt: skip
        if enqueue:
            _enqueue_on_commit(extraction.pk)
    return extraction


def _enqueue_on_commit(extraction_id: int) -> None:
    enqueue_on_commit("ingest.extract", extraction_id)


def extraction_retry(*, actor: Member, extraction_id: int) -> Extraction:
    """Queue a failed extraction again (a new attempt on the same stored bytes)."""
    with transaction.atomic():
        extraction = Extraction.objects.select_for_update().get(pk=extraction_id)
        if extraction.status != Extraction.Status.FAILED:
            raise ValidationError({"extraction": "only a failed extraction can be retried"})
        extraction.status = Extraction.Status.QUEUED
        extraction.error = ""
        extraction.lease_token = None
        extraction.lease_expires_at = None
        extraction.attempts = 0  # a person's retry: MAX_ATTEMPTS claims again
        extraction.save(update_fields=["status", "error", "lease_token", "lease_expires_at", "attempts"])
        _enqueue_on_commit(extraction.pk)
    return extraction


MAX_ATTEMPTS = 3  # claims of one extraction whose workers never finished it, before it fails


def extraction_run(extraction_id: int) -> str:
    """Convert, mask and record one extraction (idempotent: a finished or leased one is left alone)."""
    lease = lease_claim(
        Extraction, extraction_id, waiting=Q(status=Extraction.Status.QUEUED),
        running=Q(status=Extraction.Status.RUNNING),
        take={"status": Extraction.Status.RUNNING, "started_at": timezone.now()}, duration=LEASE,
    )  # fmt: skip
    if lease is None:  # finished, gone, or a live worker holds it
        return "skipped"
    started = time.monotonic()
    if lease.attempt > MAX_ATTEMPTS:
        # Every earlier claim ended with its worker gone (killed for memory, say): the sweep
        # would send it again every ten minutes, for ever, and the page would say "running".
        logger.warning("extraction %s: no outcome after %d attempts", extraction_id, MAX_ATTEMPTS)
        _finish(lease, started, status=Extraction.Status.FAILED,
                error=f"no outcome after {MAX_ATTEMPTS} attempts: the file may be too large to process")  # fmt: skip
        return "failed"
    extraction = Extraction.objects.select_related("document").get(pk=extraction_id)
    document = extraction.document
    try:
        with default_storage.open(document.storage_name, "rb") as handle:
            data = handle.read()
        converted = convert(document.detected_type, data)
        # Converters return NUL and lone surrogates from real files (a PDF string with \000,
        # HTML's &#xD800;); left in, the text's UPDATE failed outside the error handling and the
        # sweep re-ran the extraction without end.
        text, counts = mask(storable(converted.text))
    except ConversionFailed as failure:
        _finish(lease, started, status=Extraction.Status.FAILED, error=str(failure)[:300])
        logger.warning("extraction %s failed: %s", extraction.pk, failure)
        return "failed"
    except Exception:
        logger.exception("extraction %s crashed", extraction.pk)
        _finish(lease, started, status=Extraction.Status.FAILED, error="the extractor crashed; try again")
        return "failed"
    try:
        pieces, vectors, model = _chunks_and_vectors(text)
    except Exception:
        # Outside any handling, a failure here (memory, say) left the row "running" for ever.
        logger.exception("extraction %s: the text could not be chunked", extraction.pk)
        _finish(lease, started, status=Extraction.Status.FAILED, error="the text could not be split into chunks")
        return "failed"
    try:
        with transaction.atomic():
            if not lease_holds(lease, lock=True):
                # The lease expired and another worker took this extraction over: it writes the
                # text and chunks, once; a second delete-and-insert here could double them.
                logger.warning("extraction %s: lease lost, nothing written", extraction.pk)
                return "lease-lost"
            # The capture's sha256 is of its text (corpus.sources): an upload's was of "" until now.
            Source.objects.filter(pk=document.source_id).update(
                text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), updated_at=timezone.now()
            )
            SourceChunk.objects.filter(source_id=document.source_id).delete()
            SourceChunk.objects.bulk_create(
                (SourceChunk(source_id=document.source_id, ordinal=ordinal, text=piece,
                             embedding=vectors[ordinal] if vectors is not None else None, embedding_model=model)
                 for ordinal, piece in enumerate(pieces)),
                batch_size=INSERT_BATCH,  # one INSERT holds at most 65,535 parameters
            )  # fmt: skip
            _finish(
                lease, started, status=Extraction.Status.DONE, extractor=converted.extractor,
                extractor_version=converted.extractor_version, char_count=len(text), pages=converted.pages,
                masked={category: count for category, count in counts.items() if count},
            )  # fmt: skip
    except DATABASE_UNAVAILABLE as error:
        if not past_program_limits(error):
            raise  # the database is away: the lease expires and the sweep runs it again, rightly
        # Up, but refusing this text whatever the retry (re-converted and re-embedded every
        # ten minutes, "running" for ever): ended as failed, once.
        logger.warning("extraction %s: the database refused the text as past its limits", extraction.pk)
        _finish(lease, started, status=Extraction.Status.FAILED,
                error="the extracted text is too large or complex for the database to index")  # fmt: skip
        return "failed"
    except Exception:
        # Anything else would fail the same way on every retry: end it as failed, once.
        logger.exception("extraction %s: the text could not be stored", extraction.pk)
        _finish(lease, started, status=Extraction.Status.FAILED, error="the extracted text could not be stored")
        return "failed"
    logger.info("extraction %s done: %d characters, masked %s", extraction.pk, len(text), counts)
    return "done"


def _packed(pieces: list[str], max_chars: int = MAX_CHARS) -> list[str]:
    """``pieces`` as they are, unless they are more than ``_chunk_budget`` of them: then
    consecutive pieces joined while they fit in ``max_chars`` together (a piece already longer
    stays whole), which keeps the count within about twice the text's length over
    ``max_chars``. A glossary of 14,000 one-line sections (84 KB) made 14,000 chunks — each
    embedded, each held as a vector — and its insert failed past PostgreSQL's 65,535
    parameters, on every retry; 300 KB of them grew a worker by 1.6 GB."""
    if len(pieces) <= _chunk_budget(sum(len(piece) for piece in pieces), max_chars):
        return pieces
    packed: list[str] = []
    for piece in pieces:
        if packed and len(packed[-1]) + 2 + len(piece) <= max_chars:
            packed[-1] = f"{packed[-1]}\n\n{piece}"
        else:
            packed.append(piece)
    return packed


def _chunk_budget(characters: int, max_chars: int = MAX_CHARS) -> int:
    """How many chunks a text of ``characters`` keeps as its own sections: twice its length
    over a chunk's size, and a hundred more (a short note keeps its every section)."""
    return 2 * characters // max_chars + 100


def _chunks_and_vectors(text: str) -> tuple[list[str], embeddings.FloatMatrix | None, str]:
    """The text's chunks and their embeddings (None while the embedder is down: search stays full-text)."""
    pieces = _packed([f"{chunk.heading_path}\n{chunk.body}".strip() for chunk in chunk_markdown(text)
                      if chunk.body.strip()])  # fmt: skip
    try:
        # float32 rows as the embedder returns them (a list of Python floats is 12 KB a chunk).
        vectors: embeddings.FloatMatrix | None = embeddings.embed(pieces) if pieces else None
        model = embeddings.model_id()
    except embeddings.EmbeddingError:
        logger.warning("source text stored without embeddings: the embedder is unavailable")
        vectors, model = None, ""
    return pieces, vectors, model


def _finish(lease: Lease, started: float, **fields: Any) -> None:
    """Record how the run ended, only if it still holds the lease (a run that lost it writes nothing)."""
    lease_finish(lease, finished_at=timezone.now(), duration_ms=int((time.monotonic() - started) * 1000), **fields)


def extractions_sweep() -> int:
    """Re-enqueue running extractions whose lease expired (a killed worker) and, when the
    queue is idle, queued ones older than two minutes (a message that was never sent)."""
    now = timezone.now()
    return resend_lost(
        "ingest.extract",
        Extraction.objects.all(),
        died=Q(status=Extraction.Status.RUNNING) & lease_expired(),
        never_started=Q(status=Extraction.Status.QUEUED, created_at__lt=now - dt.timedelta(minutes=2)),
    )
