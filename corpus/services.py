"""The single governed write path of the corpus.

Every change to pages, revisions, chunks, sources and figures goes through a function
here, whichever door it came in by (web, MCP, Celery, management command, admin). The
guards live on this path and nowhere else:

- canonical-path validator and frontmatter validation (``corpus.frontmatter``);
- NUL check and the secret detector (``brain.text.secrets``) on every field, the page as
  rendered included — a refusal names the field, kind and line, is audited by field and
  category only, and never echoes the value;
- the permission check against the actor's grants (read from the database each time);
- an audit event per change.

Nothing reaches the live corpus without a person: ``revision_create`` writes a draft;
only ``revision_promote`` by a member holding ``approve`` (and, under the ``owner`` change
policy, being the owner) moves ``Page.current_revision``, and its only caller is
``builds.services.build_promote``, which records the promotion.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from brain import embeddings
from brain.text.secrets import SecretRefused, mask, refuse, refuse_all
from corpus import lexical
from corpus.chunking import ChunkText, chunk_markdown
from corpus.frontmatter import (
    PageDocument,
    PageInvalid,
    Problem,
    check_references,
    frontmatter_text,
    markdown_field_at,
    page_title,
    parse_page,
)
from corpus.models import Chunk, Figure, Page, PageLink, Revision, RevisionChunk, Source
from corpus.rendering import page_links, rendered_text
from grants.audit import audit_record
from grants.models import Member, Permission, Sensitivity
from grants.predicates import effective_permission
from grants.principals import Principal, SystemPrincipal

logger = logging.getLogger(__name__)

MAX_TAGS = 64
MAX_TAG_LENGTH = 128


@dataclass
class ChunkStats:
    """What attaching chunks to a revision cost."""

    total: int = 0
    new: int = 0
    reused: int = 0
    embedded: int = 0


# --------------------------------------------------------------------------- guards


def _audit_refusal(actor: Principal | None, refusal: SecretRefused, target: str) -> None:
    """Record a secret refusal: the field, categories and lines, never the value.

    The target is masked too, because a path or key can itself be the secret.
    """
    safe_target = mask(target)[0]
    audit_record(
        actor=actor,
        action="content.refused",
        target_type=refusal.field[:32],
        target=safe_target,
        metadata={"field": refusal.field, "categories": refusal.categories, "lines": refusal.lines},
    )
    logger.warning(
        "content refused: %s of %s (categories: %s)", refusal.field, safe_target, ",".join(refusal.categories)
    )


def _refuse_secrets(*, actor: Principal | None, fields: Iterable[tuple[str, str | None]], target: str) -> None:
    """NUL and secret check of each ``(field, text)``; a secret refusal is audited and re-raised."""
    try:
        refuse_all(fields)
    except SecretRefused as refusal:
        _audit_refusal(actor, refusal, target)
        raise


def _refuse_page(*, actor: Principal | None, path: str, markdown: str) -> None:
    """The path, then the file; a refusal in the file names its frontmatter key or ``body``."""
    _refuse_secrets(actor=actor, fields=[("path", path)], target=path)
    if "\x00" in markdown:
        return  # parse_page lists it with the page's other problems
    try:
        refuse(markdown, field="page")
    except SecretRefused as refusal:
        named = SecretRefused(refusal.findings, markdown_field_at(markdown, refusal.findings[0].line))
        _audit_refusal(actor, named, path)
        raise named from None


def _refuse_rendered(*, actor: Principal | None, path: str, body: str) -> None:
    """Scan the page as the reader will see it (rendered HTML, as text).

    The Markdown readings catch entities, markers, invisible characters and wrapped lines;
    rendering can still join what the source keeps apart (a link's text running into the
    word after it), so what a reader is shown is scanned too.
    """
    _refuse_secrets(actor=actor, fields=[("body (as rendered)", rendered_text(body, page_path=path))], target=path)


def _holds(
    actor: Principal | None, permission: Permission, *, path: str, category: str | None, sensitivity: int
) -> bool:
    held = effective_permission(actor, path=path, category=category, sensitivity=sensitivity)
    return held is not None and held >= permission


def may_write(actor: Principal | None, document: PageDocument, existing: Page | None, level: Permission) -> bool:
    """``level`` on the page as it will be and, if it is live, as it is now.

    Checking both stops a write from moving a page out of reach (raising sensitivity,
    changing category) or into a scope the actor holds but the page's current scope does not.
    """
    if not _holds(actor, level, path=document.path, category=document.category, sensitivity=document.sensitivity):
        return False
    if existing is not None:
        return _holds(actor, level, path=existing.path, category=existing.category, sensitivity=existing.sensitivity)
    return True


def approver_ok(actor: Principal | None, document: PageDocument, existing: Page | None) -> bool:
    """Approve on both states, and the owner rule when the change policy is ``owner``."""
    if not may_write(actor, document, existing, Permission.APPROVE):
        return False
    if isinstance(actor, SystemPrincipal):
        return True
    owner_rule = (existing is not None and existing.change_policy == "owner") or document.change_policy == "owner"
    if owner_rule and (existing is None or existing.owner.binds_as_owner):
        owner = existing.owner.username if existing is not None else document.owner
        return isinstance(actor, Member) and actor.username == owner
    return True


def markdown_sha(markdown: str) -> str:
    """The sha256 a revision records for its full Markdown (frontmatter included)."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def document_from_revision(revision: Revision) -> PageDocument:
    meta = revision.frontmatter
    return PageDocument(
        path=revision.path,
        frontmatter=meta,
        body=revision.body,
        title=page_title(meta.get("title"), revision.body, revision.path),
        type=str(meta["type"]),
        owner=str(meta["owner"]),
        status=str(meta["status"]),
        change_policy=str(meta["change_policy"]),
        as_of=dt.date.fromisoformat(str(meta["as_of"])),
        category=meta.get("category"),
        sensitivity=int(Sensitivity.from_name(str(meta.get("sensitivity", "ordinary")))),
        sources=[str(ref).removeprefix("capture:") for ref in meta.get("sources", [])],
        related=list(meta.get("related", [])),
    )


# --------------------------------------------------------------------------- validation


def page_validate(
    *,
    actor: Principal | None,
    path: str,
    markdown: str,
    unchanged: bool = False,
    branch_sources: frozenset[str] = frozenset(),
    carried: frozenset[str] = frozenset(),
) -> PageDocument:
    """Validate a page without writing it: path, frontmatter, references, NUL, secrets.

    ``unchanged``: the caller found ``markdown`` identical to the live revision of ``path``
    and will not store it again (an import skips such files), so the secret scans — which
    that revision passed when it was written — are skipped, and its citations are the live
    page's own; everything else is checked. ``carried``: capture keys the caller carried over
    from the page's own text (``check_references``).

    Raises ``PageInvalid`` (every problem listed) or ``SecretRefused``/``NulRefused``.
    """
    # Secrets first: a refusal must win over any problem message that would quote the path.
    if not unchanged:
        _refuse_page(actor=actor, path=path, markdown=markdown)
    document = parse_page(path, markdown)
    if unchanged:
        carried = carried | frozenset(document.sources)
    problems = check_references(document, principal=actor, branch_sources=branch_sources, carried=carried)
    if problems:
        raise PageInvalid(problems)
    if not unchanged:
        # The values as YAML decodes them: an escape ("\x67hp_…") reads as text only then.
        _refuse_secrets(actor=actor, fields=_frontmatter_values(document.frontmatter), target=path)
        _refuse_rendered(actor=actor, path=path, body=document.body)
    return document


def _frontmatter_values(frontmatter: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Every string in the parsed frontmatter, as ``(frontmatter <key>, value)``."""
    fields: list[tuple[str, str | None]] = []
    stack: list[tuple[str, Any]] = [(f"frontmatter {key}", value) for key, value in frontmatter.items()]
    while stack:
        field, value = stack.pop()
        if isinstance(value, str):
            fields.append((field, value))
        elif isinstance(value, dict):
            stack.extend((field, item) for item in [*value.keys(), *value.values()])
        elif isinstance(value, list):
            stack.extend((field, item) for item in value)
    return fields


# --------------------------------------------------------------------------- chunks


class StoredChunks(NamedTuple):
    new: int
    reused: int
    embedded: int  # of the new ones; 0 while the embedder is down (back-filled later)


def store_chunks(chunks: Iterable[ChunkText]) -> StoredChunks:
    """Insert the chunks not stored yet, embedding them in one call.

    Runs inside the caller's transaction. One call for many chunks lets the embedder batch
    by length (several times faster than a call per page). When the embedder fails the
    chunks are still written, without vectors — the page is found by keyword meanwhile and
    ``corpus.backfill_embeddings`` embeds them later: a person's write never waits on the
    embedder. Concurrent writers of the same chunk are harmless (same id, same text,
    ``ignore_conflicts``).
    """
    unique: dict[str, ChunkText] = {chunk.id: chunk for chunk in chunks}
    existing = set(Chunk.objects.filter(id__in=list(unique)).values_list("id", flat=True))
    missing = [chunk for chunk_id, chunk in unique.items() if chunk_id not in existing]
    if missing:
        vectors: list[Any]
        try:
            vectors = list(embeddings.embed([chunk.embedding_input for chunk in missing]))
            model_id = embeddings.model_id()
        except embeddings.EmbeddingError:
            logger.warning("%d page chunks stored without vectors: the embedder is unavailable", len(missing))
            vectors, model_id = [None] * len(missing), ""
        Chunk.objects.bulk_create(
            [
                Chunk(
                    id=chunk.id,
                    heading_path=chunk.heading_path,
                    body=chunk.body,
                    embedding=vector,
                    embedding_model=model_id,
                    lexical_heading=lexical.index_text(chunk.heading_path),
                    lexical_body=lexical.index_text(chunk.body),
                    cjk_terms=lexical.index_terms(f"{chunk.heading_path}\n{chunk.body}"),
                )
                for chunk, vector in zip(missing, vectors, strict=True)
            ],
            ignore_conflicts=True,
            batch_size=500,
        )
    embedded = len(missing) if missing and vectors[0] is not None else 0
    return StoredChunks(new=len(missing), reused=len(unique) - len(missing), embedded=embedded)


def _attach_chunks(revision: Revision, chunks: list[ChunkText]) -> ChunkStats:
    """Link ``chunks`` to ``revision`` in order, storing (and embedding) the new ones."""
    new, reused, embedded = store_chunks(chunks)
    RevisionChunk.objects.bulk_create(
        [RevisionChunk(revision=revision, chunk_id=chunk.id, ordinal=index) for index, chunk in enumerate(chunks)],
        batch_size=2000,  # one INSERT holds at most 65,535 parameters (a page of 22,000 sections)
    )
    return ChunkStats(total=len(chunks), new=new, reused=reused, embedded=embedded)


# --------------------------------------------------------------------------- revisions


def revision_create(
    *,
    actor: Principal,
    path: str,
    markdown: str,
    document: PageDocument | None = None,
    chunks: list[ChunkText] | None = None,
) -> tuple[Revision, ChunkStats]:
    """Write a draft revision of the page at ``path`` (not live until promoted).

    Checks: the page validates; ``actor`` holds at least ``suggest`` on the page as it
    will be and as it is now. Chunks are written in the same transaction, with their vectors
    — or, while the embedder is down, without (``store_chunks``; back-filled later).
    ``document``/``chunks`` let a caller that already validated and chunked the page
    (``builds.services.build_import``) skip redoing it; they must come from this ``markdown``.
    Raises ``PageInvalid``, ``SecretRefused``, ``NulRefused``, ``PermissionDenied``.
    """
    document = document or page_validate(actor=actor, path=path, markdown=markdown)
    # A page the actor cannot read is treated as no page at all: the draft is checked and
    # written exactly as for a free path, so no answer tells the actor it exists. Such a
    # draft can never replace the page unseen: ``revision_promote`` refuses it and the
    # review page lists it as a blocker.
    existing = Page.objects.visible_to(actor, "read").filter(path=path).first()
    if not may_write(actor, document, existing, Permission.SUGGEST):
        # The same refusal whether or not a page exists at the path.
        raise PermissionDenied(f"you hold no suggest permission on {path}")
    with transaction.atomic():
        revision = Revision.objects.create(
            page=existing,
            path=path,
            frontmatter=document.frontmatter,
            frontmatter_text=frontmatter_text(markdown),
            body=document.body,
            sha256=markdown_sha(markdown),
            author=actor if isinstance(actor, Member) else None,
        )
        stats = _attach_chunks(revision, chunks if chunks is not None else chunk_markdown(document.body))
        audit_record(
            actor=actor,
            action="revision.create",
            target_type="page",
            target=path,
            metadata={"revision": revision.pk, "chunks": stats.total, "embedded": stats.embedded},
        )
    return revision, stats


def _rebuild_links(page: Page, document: PageDocument) -> None:
    PageLink.objects.filter(from_page=page).delete()
    rows = [
        PageLink(from_page=page, to_path=target, kind=PageLink.Kind.LINK)
        for target in page_links(document.body, page_path=page.path)
    ]
    rows += [
        PageLink(from_page=page, to_path=target, kind=PageLink.Kind.RELATED)
        for target in set(document.related) - {page.path}
    ]
    PageLink.objects.bulk_create(rows)


def revision_promote(*, actor: Principal, revision: Revision) -> Page:
    """Make ``revision`` the live version of its page. The person is recorded.

    ``actor`` must hold ``approve`` on the page as it will be and as it is now, and be
    the owner when the change policy is ``owner``. Locks the revision (and page) rows;
    refuses a revision already promoted or one older than the live revision. Rebuilds
    the page's links. Re-checks visibility after the write and rolls back if the actor
    would lose approve over what they just approved.
    """
    with transaction.atomic():
        locked = Revision.objects.select_for_update().get(pk=revision.pk)
        if locked.promoted_at is not None:
            raise ValidationError("this revision has already been promoted")
        document = document_from_revision(locked)
        existing = Page.objects.select_for_update().filter(path=locked.path).first()
        if not approver_ok(actor, document, existing):
            raise PermissionDenied(f"you may not approve changes to {locked.path}")
        if unseen_replacement(locked, existing):
            raise PermissionDenied(
                f"{locked.path}: the author of this draft cannot read the live page it would replace"
            )
        owner = Member.objects.filter(user__username=document.owner, is_active=True).first()
        if owner is None:
            raise PageInvalid([Problem("owner", f"{document.owner!r} is not an active member")])
        values: dict[str, Any] = {
            "title": document.title,
            "type": document.type,
            "owner": owner,
            "status": document.status,
            "change_policy": document.change_policy,
            "category": document.category,
            "sensitivity": document.sensitivity,
            "as_of": document.as_of,
            "current_revision": locked,
        }
        if existing is None:
            page = Page.objects.create(path=locked.path, **values)
        else:
            page = existing
            for key, value in values.items():
                setattr(page, key, value)
            page.save(update_fields=[*values, "updated_at"])
        locked.page = page
        locked.promoted_by = actor if isinstance(actor, Member) else None
        locked.promoted_at = timezone.now()
        locked.save(update_fields=["page", "promoted_by", "promoted_at"])
        _rebuild_links(page, document)
        audit_record(
            actor=actor,
            action="page.promote",
            target_type="page",
            target=page.path,
            metadata={"revision": locked.pk, "created": existing is None},
        )
        if (
            not isinstance(actor, SystemPrincipal)
            and not Page.objects.visible_to(actor, "approve").filter(pk=page.pk).exists()
        ):
            raise PermissionDenied(f"you may not approve changes to {locked.path}")
    return page


def unseen_replacement(revision: Revision, existing: Page | None) -> bool:
    """Would promoting ``revision`` replace a live page its author cannot read?

    Drafts to such a path are accepted (refusing them would tell the author the page
    exists); they are stopped here instead, at the person who can see both.
    """
    if existing is None or existing.current_revision_id is None or revision.author_id is None:
        return False
    author = Member.objects.filter(pk=revision.author_id).first()
    return author is None or not Page.objects.visible_to(author, "read").filter(pk=existing.pk).exists()


def may_approve_live_page(actor: Principal | None, page: Page) -> bool:
    """``approve`` on a live page through the grants, and ownership under the ``owner`` policy."""
    if isinstance(actor, SystemPrincipal):
        return True
    if not Page.objects.visible_to(actor, "approve").filter(pk=page.pk).exists():
        return False
    # The owner rule binds only an active owner (Member.binds_as_owner), as for a write: a
    # page whose owner was suspended or left falls back to its approve holders.
    return (
        page.change_policy != "owner"
        or not page.owner.binds_as_owner
        or (isinstance(actor, Member) and actor.pk == page.owner_id)
    )


def page_retire(*, actor: Principal, path: str) -> Page:
    """Take the page at ``path`` out of the live corpus (a promoted delete or the old side of a move).

    The page row and its revisions stay as history; it is no longer live, so no reader
    sees it. ``actor`` must hold ``approve`` on it (and be its owner under the ``owner``
    policy). Only ``builds.services.build_promote`` calls this.
    """
    with transaction.atomic():
        page = Page.objects.select_for_update().select_related("owner__user").filter(path=path).first()
        if page is None or page.current_revision_id is None:
            raise Page.DoesNotExist(f"{path} is not a live page")
        if not may_approve_live_page(actor, page):
            raise PermissionDenied(f"you may not approve changes to {path}")
        page.current_revision = None
        page.save(update_fields=["current_revision", "updated_at"])
        PageLink.objects.filter(from_page=page).delete()
        audit_record(actor=actor, action="page.retire", target_type="page", target=path)
    return page


def figures_follow_move(*, actor: Principal, from_path: str, to_path: str) -> int:
    """The figure values recorded on the page at ``from_path`` now belong to the page at
    ``to_path`` (a promoted move; drafts of the same build included); returns how many.

    A figure's history follows its page: left on the retired row, every value — one approved
    in the moving build too — went out of every reader's reach. Only
    ``builds.services.build_promote`` calls this, after ``page_retire`` of ``from_path``.
    """
    with transaction.atomic():
        old = Page.objects.filter(path=from_path).first()
        new = Page.objects.filter(path=to_path).first()
        if old is None or new is None:
            return 0
        moved = Figure.objects.filter(page=old).update(page=new)
        if moved:
            audit_record(actor=actor, action="figure.move", target_type="page", target=to_path,
                         metadata={"from": from_path, "figures": moved})  # fmt: skip
    return moved


def drafts_publish(*, actor: Principal, source_ids: list[int], figure_ids: list[int]) -> None:
    """Make draft captures and figure values live. Only ``builds.services.build_promote`` calls this,
    after its blockers confirmed ``actor`` may approve each of them — and after the build's page
    revisions went live: a value is recorded under its page's revision as it goes live."""
    live_revision = Page.objects.filter(pk=OuterRef("page_id")).values("current_revision_id")[:1]
    with transaction.atomic():
        Source.objects.filter(pk__in=source_ids, is_live=False).update(is_live=True, updated_at=timezone.now())
        Figure.objects.filter(pk__in=figure_ids, is_live=False).update(
            is_live=True, recorded_under_id=Subquery(live_revision)
        )
        if source_ids or figure_ids:
            audit_record(
                actor=actor, action="drafts.publish", target_type="corpus",
                metadata={"captures": len(source_ids), "figures": len(figure_ids)},
            )  # fmt: skip
