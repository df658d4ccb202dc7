"""The only writes to builds: open, draft, submit, promote, reject, cancel, credentials, import.

There is no arrow from a build to the live corpus without a person: ``build_promote`` is
the only caller of ``corpus.services.revision_promote``, it runs the same blocker list
the UI shows (``builds.selectors.build_promotion_blockers``), and it records who approved
exactly which (path, revision) pairs. Every transition locks the build row first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from brain import bearer, callers
from brain.callers import Caller
from brain.domain import DomainError
from brain.text.paths import PathError, validate_page_path
from brain.text.secrets import NulRefused, SecretRefused, mask, refuse, refuse_all
from builds.models import Build, BuildCapture, BuildChange, BuildCredential, BuildFigure, BuildJob, Promotion, Review
from builds.selectors import build_promotion_blockers
from corpus.chunking import chunk_markdown
from corpus.figures import figure_check, figure_record, figure_source
from corpus.frontmatter import PageDocument, PageInvalid, Problem, parse_page
from corpus.models import Page, Source
from corpus.selectors import ReferenceFilter, frontmatter_references, hidden_references
from corpus.services import (
    ChunkStats,
    drafts_publish,
    figures_follow_move,
    markdown_sha,
    may_write,
    page_retire,
    page_validate,
    revision_create,
    revision_promote,
    store_chunks,
)
from corpus.sources import capture_key_assign, source_create
from grants.audit import audit_record
from grants.models import Member, Permission
from grants.principals import Principal, SystemPrincipal, actor_fields

TOKEN_PREFIX = "bld_"  # noqa: S105 (a public marker that tells credentials apart, not a secret)


class PromotionBlocked(DomainError, ValidationError):  # type: ignore[misc]  # both define ``code``; set per instance
    """Promotion refused; ``blockers`` says why, in the words the review page shows."""

    status = 409

    def __init__(self, blockers: list[str]) -> None:
        super().__init__("; ".join(blockers), code="promotion_blocked")  # ValidationError keeps ``code`` per instance
        self.blockers = blockers

    @property
    def safe_message(self) -> str:
        return "; ".join(self.blockers)


class CredentialInvalid(PermissionError):
    """A build credential that is unknown, expired, revoked or whose build has ended (one message for all)."""

    def __init__(self) -> None:
        super().__init__("the build credential is not valid")


def builds_settings() -> dict[str, object]:
    defaults: dict[str, object] = {"CREDENTIAL_LIFETIME_SECONDS": 7200, "ALLOW_SELF_APPROVAL": False}
    return {**defaults, **getattr(settings, "BRAIN_BUILDS", {})}


def _lock(build: Build) -> Build:
    return Build.objects.select_for_update().get(pk=build.pk)


def _finish(build: Build, status: str) -> None:
    """Move a locked build to a terminal status and revoke its credentials at once."""
    build.status = status
    build.finished_at = timezone.now()
    build.save(update_fields=["status", "finished_at", "updated_at"])
    BuildCredential.objects.filter(build=build, revoked_at__isnull=True).update(revoked_at=timezone.now())


# --------------------------------------------------------------------------- opening and credentials


def build_open(*, actor: Principal, title: str, purpose: str = "", kind: str = Build.Kind.CHANGE) -> Build:
    """Open a build requested by ``actor`` (a member, or SYSTEM for operator imports)."""
    if not title.strip():
        raise ValidationError({"title": "a build needs a title"})
    refuse_all([("build title", title), ("build purpose", purpose)])
    if kind not in Build.Kind.values:
        raise ValidationError({"kind": f"kind must be one of {', '.join(Build.Kind.values)}"})
    if not isinstance(actor, Member | SystemPrincipal):
        raise PermissionDenied("only a member or the system may open a build")
    with transaction.atomic():
        build = Build.objects.create(
            title=title.strip()[:200],
            purpose=purpose,
            kind=kind,
            requester=actor if isinstance(actor, Member) else None,
        )
        if isinstance(actor, Member):
            build.participants.add(actor)
        audit_record(actor=actor, action="build.open", target_type="build", target=str(build.public_id))
    return build


def build_credential_issue(
    *, actor: Principal, build: Build, lifetime: dt.timedelta | None = None
) -> tuple[BuildCredential, str]:
    """A new credential for ``build``; returns the row and the token, which is never stored or shown again."""
    seconds = int(str(builds_settings()["CREDENTIAL_LIFETIME_SECONDS"]))
    with transaction.atomic():
        locked = _lock(build)
        if not _is_requester(actor, locked):
            raise PermissionDenied("only the build's requester may issue its credentials")
        if locked.status != Build.Status.OPEN:
            raise ValidationError("credentials are issued only for open builds")
        if locked.requester_id is None:
            # A credential acts with its requester's grants; the system actor has no limits.
            raise ValidationError("credentials are issued only for builds a member requested")
        token = bearer.mint(TOKEN_PREFIX)
        credential = BuildCredential.objects.create(
            build=locked,
            prefix=token.shown,
            token_hash=token.digest,
            expires_at=timezone.now() + (lifetime or dt.timedelta(seconds=seconds)),
        )
        audit_record(actor=actor, action="build.credential_issue", target_type="build", target=str(locked.public_id))
    return credential, token.raw


def build_credential_revoke(*, actor: Member, credential_id: int) -> None:
    """Revoke one live credential of a build ``actor`` requested; any other is ``DoesNotExist``."""
    with transaction.atomic():
        credential = (
            BuildCredential.objects.select_related("build")
            .filter(pk=credential_id, build__requester=actor, revoked_at__isnull=True)
            .first()
        )
        if credential is None:
            raise BuildCredential.DoesNotExist("no such credential")
        BuildCredential.objects.filter(pk=credential.pk).update(revoked_at=timezone.now())
        audit_record(actor=actor, action="build.credential_revoke", target_type="build",
                     target=str(credential.build.public_id), metadata={"prefix": credential.prefix})  # fmt: skip


def build_credential_resolve(token: str) -> Build:
    """The open build a token is bound to; ``CredentialInvalid`` (one message) otherwise.

    Checked on every request: unknown, expired, revoked and ended builds all fail alike.
    """
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX):
        raise CredentialInvalid
    credential = (
        BuildCredential.objects.select_related("build__requester__user").filter(token_hash=bearer.digest(token)).first()
    )
    if (
        credential is None
        or credential.revoked_at is not None
        or credential.expires_at <= timezone.now()
        or credential.build.status != Build.Status.OPEN
    ):
        raise CredentialInvalid
    return credential.build


def build_credential_caller(token: str) -> Caller | None:
    """The ``build`` caller behind a credential: its requester's grants, bound to its build."""
    try:
        build = build_credential_resolve(token)
    except CredentialInvalid:
        return None
    requester = build.requester
    if requester is None or not (requester.is_active and requester.user.is_active):
        return None
    return Caller(principal=requester, kind=callers.BUILD, scopes=frozenset({callers.SCOPE_CORPUS_READ}), build=build)


def _is_requester(actor: Principal, build: Build) -> bool:
    if isinstance(actor, SystemPrincipal):
        return build.requester_id is None
    return isinstance(actor, Member) and actor.pk == build.requester_id


def acting_requester(build: Build) -> Principal:
    """Whose grants a build acts under: its requesting member, or the system for operator imports."""
    return build.requester if build.requester is not None else SystemPrincipal()


# --------------------------------------------------------------------------- drafting


def build_write_page(
    *,
    build: Build,
    path: str,
    markdown: str,
    document: PageDocument | None = None,
    read_at: Any = None,
    carried: frozenset[str] = frozenset(),
) -> BuildChange:
    """Write a draft of ``path`` on the build's branch, as its requester.

    Same guards as any write (path, frontmatter, references, NUL, secrets); the requester
    needs ``suggest`` on the page as it is and as it will be. Nothing becomes live.

    ``read_at``: when the text this draft is made from was read, for a draft derived from an
    earlier one (a link, a section): the change keeps that moment (``BuildChange.written_at``),
    so a live change promoted since still blocks it ("the live page changed after this draft
    was written") — re-deriving it must not hide a live edit it would overwrite.
    ``carried``: capture keys a derived draft carried over from the page's own text, kept
    even where the requester cannot read them (``corpus.frontmatter.check_references``).
    """
    with transaction.atomic():
        locked = _lock(build)
        if locked.status != Build.Status.OPEN:
            raise ValidationError("the build is not open for changes")
        if document is None:
            markdown, kept = _keep_hidden_references(acting_requester(locked), path, markdown)
            carried = carried | kept
            document = page_validate(
                actor=acting_requester(locked), path=path, markdown=markdown,
                branch_sources=branch_capture_keys(locked), carried=carried,
            )  # fmt: skip
        revision, _ = revision_create(actor=acting_requester(locked), path=path, markdown=markdown, document=document)
        change, _ = BuildChange.objects.update_or_create(
            build=locked,
            path=path,
            defaults={"action": BuildChange.Action.WRITE, "revision": revision, "new_path": "", "read_at": read_at},
        )
        audit_record(
            actor=acting_requester(locked), action="build.write_page", target_type="build",
            target=str(locked.public_id), metadata={"path": path},
        )  # fmt: skip
    return change


def _keep_hidden_references(requester: Principal, path: str, markdown: str) -> tuple[str, frozenset[str]]:
    """``markdown`` with the live page's citations and related pages that ``requester`` cannot
    read put back, and the capture keys so kept (for ``check_references``).

    The requester was shown the page without them (``page_read``), so a rewrite made from what
    they read would drop them unseen: nobody removes a citation they cannot see; an approver
    who can read it may. When one is put back, the frontmatter is written out again (key
    order kept; comments in it are not). Markdown that does not parse is returned as it is,
    for ``page_validate`` to report.
    """
    try:
        validate_page_path(path)
    except PathError:
        return markdown, frozenset()  # page_validate refuses the path, naming the rule
    hidden_related, hidden_sources = hidden_references(principal=requester, path=path)
    if not hidden_related and not hidden_sources:
        return markdown, frozenset()
    try:
        document = parse_page(path, markdown)
    except PageInvalid:
        return markdown, frozenset()
    frontmatter = dict(document.frontmatter)
    related, sources = frontmatter_references(frontmatter)
    missing_related = [item for item in hidden_related if item not in related]
    missing_sources = [item for item in hidden_sources if item not in sources]
    if missing_related:
        frontmatter["related"] = [*related, *missing_related]
    if missing_sources:
        frontmatter["sources"] = [*sources, *missing_sources]
    kept = frozenset(item.removeprefix("capture:") for item in missing_sources)
    if not missing_related and not missing_sources:
        return markdown, kept
    return _markdown_of(frontmatter, document.body), kept


def branch_capture_keys(build: Build) -> frozenset[str]:
    """Keys of the captures recorded on ``build``'s branch (a page on it may cite them)."""
    return frozenset(BuildCapture.objects.filter(build=build).values_list("source__key", flat=True))


def build_delete_page(*, build: Build, path: str) -> BuildChange:
    """Propose taking the live page at ``path`` out of the corpus (history is kept).

    The requester must be able to see the page and hold ``suggest`` on it; a page they
    cannot see is reported exactly like a missing one (``Page.DoesNotExist``).
    """
    with transaction.atomic():
        locked = _lock(build)
        if locked.status != Build.Status.OPEN:
            raise ValidationError("the build is not open for changes")
        requester = acting_requester(locked)
        page = Page.objects.visible_to(requester, "read").get(path=path)
        if not Page.objects.visible_to(requester, "suggest").filter(pk=page.pk).exists():
            raise PermissionDenied(f"you hold no suggest permission on {path}")
        change, _ = BuildChange.objects.update_or_create(
            build=locked,
            path=path,
            # Proposed now, against the page as it is now: an earlier draft's moment is gone.
            defaults={"action": BuildChange.Action.DELETE, "revision": None, "new_path": "", "read_at": None},
        )
        audit_record(
            actor=requester, action="build.delete_page", target_type="build", target=str(locked.public_id),
            metadata={"path": path},
        )  # fmt: skip
    return change


def build_move_page(*, build: Build, path: str, new_path: str) -> BuildChange:
    """Propose moving the live page at ``path`` to ``new_path`` (a draft at the new path, the old one retired).

    ``new_path`` is validated, never repaired; it must not be a live page. The requester
    needs ``suggest`` on both paths. A draft of the page already written on this build moves
    with it (its edits are kept); otherwise the live revision does.
    """
    refuse(new_path, field="new_path")
    with transaction.atomic():
        locked = _lock(build)
        if locked.status != Build.Status.OPEN:
            raise ValidationError("the build is not open for changes")
        requester = acting_requester(locked)
        page = Page.objects.visible_to(requester, "read").select_related("current_revision").get(path=path)
        if not Page.objects.visible_to(requester, "suggest").filter(pk=page.pk).exists():
            raise PermissionDenied(f"you hold no suggest permission on {path}")
        # Only a page the requester can read is reported as taken; a hidden one is answered
        # as a free path (corpus.services.revision_create says why and where it is stopped).
        if Page.objects.visible_to(requester, "read").filter(path=new_path).exists():
            raise ValidationError({"new_path": f"{new_path} is already a live page"})
        current = page.current_revision
        assert current is not None  # visible pages are live
        drafted = (
            BuildChange.objects.select_related("revision")
            .filter(build=locked, path=path, action__in=[BuildChange.Action.WRITE, BuildChange.Action.MOVE])
            .first()
        )
        source = drafted.revision if drafted is not None and drafted.revision is not None else current
        markdown = _markdown_of(source.frontmatter, source.body)
        document = page_validate(
            actor=requester, path=new_path, markdown=markdown, branch_sources=branch_capture_keys(locked),
            carried=_cited_keys(source.frontmatter),
        )  # fmt: skip
        revision, _ = revision_create(actor=requester, path=new_path, markdown=markdown, document=document)
        read_at = drafted.written_at if drafted is not None and drafted.revision is not None else None
        change, _ = BuildChange.objects.update_or_create(
            build=locked,
            path=path,
            defaults={
                "action": BuildChange.Action.MOVE,
                "revision": revision,
                "new_path": new_path,
                "read_at": read_at,
            },
        )
        audit_record(
            actor=requester, action="build.move_page", target_type="build", target=str(locked.public_id),
            metadata={"path": path, "new_path": new_path},
        )  # fmt: skip
    return change


def build_record_capture(*, build: Build, **fields: Any) -> BuildCapture:
    """Record a capture on the branch: a draft source, invisible until the build is promoted.

    Same guards as ``corpus.services.source_create`` (key form, scanner, the requester's
    ``suggest`` on ``captures/<key>``). The key gets a server-chosen suffix
    (``capture_key_assign``): the caller cites the key it is given back.
    """
    fields["key"] = capture_key_assign(fields.get("key"), actor=acting_requester(build))
    with transaction.atomic():
        locked = _lock(build)
        if locked.status != Build.Status.OPEN:
            raise ValidationError("the build is not open for changes")
        source = source_create(actor=acting_requester(locked), draft=True, **fields)
        capture = BuildCapture.objects.create(build=locked, source=source)
    return capture


def build_record_figure(
    *, build: Build, page_path: str, key: str, value: object, unit: str = "", as_of: dt.date,
    source_key: str | None = None,
) -> BuildFigure:  # fmt: skip
    """Record a figure value on the branch, invisible until promotion: a draft on a live page, or
    — on a page this build creates — a pending value recorded when the page goes live.

    It may cite a capture recorded on the same branch. ``Page.DoesNotExist`` when the page is
    neither live and readable nor written on this branch.
    """
    with transaction.atomic():
        locked = _lock(build)
        if locked.status != Build.Status.OPEN:
            raise ValidationError("the build is not open for changes")
        requester = acting_requester(locked)
        branch_sources = branch_capture_keys(locked)
        if not Page.objects.visible_to(requester, "read").filter(path=page_path).exists() and _written_here(
            locked, page_path
        ):
            number = figure_check(actor=requester, page_path=page_path, key=key, value=value, unit=unit)
            figure_source(actor=requester, source_key=source_key, branch_sources=branch_sources)
            pending = {"page_path": page_path, "key": key, "value": format(number, "f"), "unit": unit,
                       "as_of": as_of.isoformat(), "source_key": source_key}  # fmt: skip
            return BuildFigure.objects.create(build=locked, pending=pending)
        figure = figure_record(
            actor=requester, page_path=page_path, key=key, value=value,  # type: ignore[arg-type]
            unit=unit, as_of=as_of, source_key=source_key, draft=True, branch_sources=branch_sources,
        )  # fmt: skip
        recorded = BuildFigure.objects.create(build=locked, figure=figure)
    return recorded


def _written_here(build: Build, path: str) -> bool:
    """Whether ``build`` writes (or moves a page to) ``path``."""
    return (
        BuildChange.objects.filter(build=build, revision__path=path).exclude(action=BuildChange.Action.DELETE).exists()
    )


def _record_pending_figures(build: Build) -> int:
    """At promotion, after the pages: record each value held for a page new in ``build``.

    ``PromotionBlocked`` (rolling the whole promotion back) when its page is not live now — the
    build stopped writing it — or its capture cannot be read.
    """
    recorded = 0
    branch_sources = branch_capture_keys(build)
    for item in BuildFigure.objects.select_for_update().filter(build=build, figure__isnull=True):
        held: dict[str, Any] = item.pending or {}
        try:
            item.figure = figure_record(
                actor=acting_requester(build), page_path=held["page_path"], key=held["key"], value=held["value"],
                unit=held["unit"], as_of=dt.date.fromisoformat(held["as_of"]), source_key=held["source_key"],
                branch_sources=branch_sources,
            )  # fmt: skip
        except (Page.DoesNotExist, Source.DoesNotExist, PermissionDenied):
            raise PromotionBlocked(
                [f"figure {held['key']}: its page or capture is no longer part of this build"]
            ) from None
        item.save(update_fields=["figure"])
        recorded += 1
    return recorded


def _branch_markdown(build: Build, path: str) -> tuple[dict[str, object], str, Any]:
    """The page as the branch sees it — its draft on this build, else the live page the requester
    can read — and when that draft's text was read (None for the live page: read now).
    ``PathError`` for a path that is not canonical (a NUL in it was a database error)."""
    refuse(path, field="path")
    validate_page_path(path)
    change = (
        BuildChange.objects.filter(build=build, path=path, action=BuildChange.Action.WRITE)
        .select_related("revision")
        .first()
    )
    if change is not None and change.revision is not None:
        return dict(change.revision.frontmatter), change.revision.body, change.written_at
    page = Page.objects.visible_to(acting_requester(build), "read").select_related("current_revision").get(path=path)
    assert page.current_revision is not None
    return dict(page.current_revision.frontmatter), page.current_revision.body, None


def build_link_pages(*, build: Build, path: str, target: str, link: bool = True) -> BuildChange:
    """Add (or, with ``link=False``, remove) ``target`` in the page's ``related`` list, as a new draft."""
    refuse(target, field="target")
    validate_page_path(target)
    frontmatter, body, read_at = _branch_markdown(build, path)
    existing = frontmatter.get("related") or []
    related = [str(item) for item in existing] if isinstance(existing, list) else []
    if link and target not in related:
        related.append(target)
    if not link:
        related = [item for item in related if item != target]
    frontmatter["related"] = related
    return build_write_page(build=build, path=path, markdown=_markdown_of(frontmatter, body), read_at=read_at,
                            carried=_cited_keys(frontmatter))  # fmt: skip


def build_add_section(*, build: Build, path: str, heading: str, text: str, cite: str) -> BuildChange:
    """Append a section to ``path`` as the branch sees it (its draft here, else the live page) and
    cite the capture ``cite`` in its ``sources``; ``as_of`` becomes today. A new draft, like any write.

    ``Page.DoesNotExist`` when the requester cannot read a page at ``path`` (as for a missing one).
    """
    frontmatter, body, read_at = _branch_markdown(build, path)
    carried = _cited_keys(frontmatter)
    existing = frontmatter.get("sources") or []
    sources = [str(item) for item in existing] if isinstance(existing, list) else []
    if f"capture:{cite}" not in sources:
        sources.append(f"capture:{cite}")
    frontmatter["sources"] = sources
    frontmatter["as_of"] = timezone.localdate().isoformat()
    section = f"## {' '.join(heading.split())}\n\n{text.strip()}\n"
    return build_write_page(
        build=build, path=path, markdown=_markdown_of(frontmatter, body.rstrip() + "\n\n" + section), read_at=read_at,
        carried=carried,
    )  # fmt: skip


def _cited_keys(frontmatter: dict[str, Any]) -> frozenset[str]:
    """The capture keys a page's frontmatter cites (what a draft derived from it carries over)."""
    _, sources = frontmatter_references(frontmatter)
    return frozenset(source.removeprefix("capture:") for source in sources)


def _markdown_of(frontmatter: dict[str, object], body: str) -> str:
    import yaml

    return "---\n" + yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True) + "---\n" + body


def build_submit(*, actor: Principal, build: Build) -> Build:
    """Open → awaiting review. Only the requester; a build with no change cannot be submitted."""
    with transaction.atomic():
        locked = _lock(build)
        if not _is_requester(actor, locked):
            raise PermissionDenied("only the build's requester may submit it")
        if locked.status != Build.Status.OPEN:
            raise ValidationError("only an open build can be submitted")
        if BuildJob.objects.filter(build=locked, state__in=(BuildJob.State.PENDING, BuildJob.State.RUNNING)).exists():
            # Submitted mid-import, the reviewer approved the files drafted so far and the rest
            # were dropped (or the build failed while awaiting review).
            raise ValidationError("the build is still drafting its files; submit it once the import has finished")
        if not (locked.changes.exists() or locked.captures.exists() or locked.figures.exists()):
            raise ValidationError("the build has no changes to review")
        locked.status = Build.Status.AWAITING_REVIEW
        locked.submitted_at = timezone.now()
        locked.save(update_fields=["status", "submitted_at", "updated_at"])
        audit_record(actor=actor, action="build.submit", target_type="build", target=str(locked.public_id))
    return locked


# --------------------------------------------------------------------------- review


def build_promote(*, actor: Principal, build: Build, note: str = "") -> Promotion:
    """Make every draft of the build live in one transaction, recorded as approved by ``actor``.

    Refuses (``PromotionBlocked``) while ``build_promotion_blockers`` lists anything —
    the same list the review page shows. If any page fails while being promoted, every
    page stays as it was. Revokes the build's credentials.
    """
    refuse(note, field="review note")
    with transaction.atomic():
        locked = _lock(build)
        _lock_paths(locked)
        blockers = build_promotion_blockers(build=locked, approver=actor)
        if blockers:
            raise PromotionBlocked(blockers)
        approved: list[dict[str, str | int | None]] = []
        for change in locked.changes.select_related("revision").order_by("path"):
            # The live revision this change replaces, recorded so the approved diff stays
            # exactly what the approver saw, like a merged pull request.
            previous = _live_revision_id(change.path)
            if change.action == BuildChange.Action.DELETE:
                page_retire(actor=actor, path=change.path)
                approved.append(
                    {"path": change.path, "action": change.action, "sha256": "", "revision": None, "previous": previous}
                )
                continue
            assert change.revision is not None  # writes and moves carry a revision (database CHECK)
            if change.action == BuildChange.Action.WRITE:
                previous = _live_revision_id(change.revision.path)
            revision_promote(actor=actor, revision=change.revision)
            if change.action == BuildChange.Action.MOVE:
                page_retire(actor=actor, path=change.path)
                figures_follow_move(actor=actor, from_path=change.path, to_path=change.revision.path)
            approved.append(
                {"path": change.revision.path, "action": change.action, "sha256": change.revision.sha256,
                 "from": change.path if change.action == BuildChange.Action.MOVE else "",
                 "revision": change.revision.pk, "previous": previous}
            )  # fmt: skip
        drafts_publish(
            actor=actor,
            source_ids=list(locked.captures.values_list("source_id", flat=True)),
            figure_ids=list(locked.figures.filter(figure__isnull=False).values_list("figure_id", flat=True)),
        )
        _record_pending_figures(locked)
        kind, _, label = actor_fields(actor)
        promotion = Promotion.objects.create(
            build=locked,
            approver=actor if isinstance(actor, Member) else None,
            approver_label=label,
            note=note,
            approved=approved,
        )
        if isinstance(actor, Member):
            Review.objects.create(build=locked, reviewer=actor, decision=Review.Decision.APPROVE, note=note)
        _finish(locked, Build.Status.PROMOTED)
        audit_record(
            actor=actor,
            action="build.promote",
            target_type="build",
            target=str(locked.public_id),
            metadata={"pages": len(approved), "approver_kind": kind},
        )
    return promotion


def _lock_paths(build: Build) -> None:
    """Serialise promotions that touch the same page paths, until this transaction ends.

    Each path gets a transaction-scoped advisory lock (in sorted order: two promotions never
    wait on each other crosswise), taken before the blockers are read: a second approver's
    promotion of another build over the same page then sees the first one's revision and is
    refused as a stale draft — without the lock both passed the check and the later write
    silently replaced the earlier, approved one. A path with no page row yet (a new page) is
    locked the same way, which a row lock could not do.
    """
    paths: set[str] = set()
    for path, new_path, revision_path in build.changes.values_list("path", "new_path", "revision__path"):
        paths.update(p for p in (path, new_path, revision_path) if p)
    with connection.cursor() as cursor:
        for path in sorted(paths):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"brain.page:{path}"])


def _live_revision_id(path: str) -> int | None:
    return Page.objects.filter(path=path).values_list("current_revision_id", flat=True).first()


def build_reject(*, actor: Member, build: Build, note: str = "") -> Build:
    """Awaiting review → rejected, by a member holding approve on at least one of its pages
    (not its requester, who withdraws it instead).

    A rejection needs a reason (``note``): the requester must learn what to change.
    """
    if not note.strip():
        raise ValidationError({"note": "say why the build is rejected, so its author knows what to change"})
    refuse(note, field="review note")
    with transaction.atomic():
        locked = _lock(build)
        if locked.status != Build.Status.AWAITING_REVIEW:
            raise ValidationError("only a build awaiting review can be rejected")
        if locked.requester_id is not None and locked.requester_id == actor.pk:
            # Their own build is theirs to withdraw: recorded as "rejected by" its author, it
            # read as a reviewer's verdict, and a reason to themselves.
            raise ValidationError("you requested this build: withdraw it instead of rejecting it")
        paths = list(locked.changes.values_list("path", flat=True))
        if not Page.objects.visible_to(actor, "approve").filter(path__in=paths).exists() and not _may_approve_new(
            actor, locked
        ):
            raise PermissionDenied("you may not review this build")
        Review.objects.create(build=locked, reviewer=actor, decision=Review.Decision.REJECT, note=note)
        _finish(locked, Build.Status.REJECTED)
        audit_record(actor=actor, action="build.reject", target_type="build", target=str(locked.public_id))
    return locked


def _may_approve_new(actor: Principal, build: Build) -> bool:
    from builds.selectors import approves_any_part

    return approves_any_part(actor, build)


def builds_cancel_carrying(*, actor: Principal, key_prefix: str, uri_suffix: str, reason: str) -> int:
    """Cancel every open or awaiting build that carries a capture keyed ``key_prefix…`` whose
    URI ends with ``uri_suffix``, because what it copied was withdrawn (``reason``, audited);
    returns how many. Runs inside the caller's transaction; a promoted build stays promoted —
    a person approved it."""
    carrying = BuildCapture.objects.filter(
        source__key__startswith=key_prefix,
        source__uri__endswith=uri_suffix,
        build__status__in=[Build.Status.OPEN, Build.Status.AWAITING_REVIEW],
    ).values("build_id")
    cancelled = 0
    for build in Build.objects.select_for_update().filter(pk__in=carrying).order_by("pk"):
        if build.is_terminal:
            continue
        _finish(build, Build.Status.CANCELLED)
        audit_record(actor=actor, action="build.cancel", target_type="build", target=str(build.public_id),
                     metadata={"reason": reason})  # fmt: skip
        cancelled += 1
    return cancelled


def build_cancel(*, actor: Principal, build: Build) -> Build:
    """Open or awaiting review → cancelled, by the requester."""
    with transaction.atomic():
        locked = _lock(build)
        if not _is_requester(actor, locked):
            raise PermissionDenied("only the build's requester may cancel it")
        if locked.is_terminal:
            raise ValidationError("the build has already ended")
        _finish(locked, Build.Status.CANCELLED)
        audit_record(actor=actor, action="build.cancel", target_type="build", target=str(locked.public_id))
    return locked


def builds_hand_over(*, actor: Principal, member: Member, to: Member | None) -> tuple[int, int]:
    """End ``member``'s hold on their unfinished builds when they are suspended or leave.

    Administrators only. With ``to=None`` every open or awaiting-review build requested by
    ``member`` is cancelled; otherwise it is reassigned to ``to`` (an active member), who
    carries it on. Either way every credential of those builds is revoked at once: an agent
    holding one stops on its next call, and the new requester issues a fresh one. Returns
    ``(cancelled, reassigned)``; each build is audited.
    """
    from grants.services import require_administrator

    require_administrator(actor)
    if to is not None and (to.pk == member.pk or not (to.is_active and to.user.is_active)):
        raise ValidationError({"reassign_to": "reassign to another active member"})
    cancelled = reassigned = 0
    with transaction.atomic():
        unfinished = Build.objects.select_for_update().filter(
            requester=member, status__in=[Build.Status.OPEN, Build.Status.AWAITING_REVIEW]
        )
        for build in unfinished.order_by("pk"):
            if to is None:
                _finish(build, Build.Status.CANCELLED)
                cancelled += 1
                audit_record(actor=actor, action="build.cancel", target_type="build", target=str(build.public_id),
                             metadata={"reason": f"requester {member.username} suspended"})  # fmt: skip
                continue
            build.requester = to
            build.save(update_fields=["requester", "updated_at"])
            build.participants.add(to)
            BuildCredential.objects.filter(build=build, revoked_at__isnull=True).update(revoked_at=timezone.now())
            reassigned += 1
            audit_record(actor=actor, action="build.reassign", target_type="build", target=str(build.public_id),
                         metadata={"from": member.username, "to": to.username})  # fmt: skip
    return cancelled, reassigned


# --------------------------------------------------------------------------- import


@dataclass
class ImportFileReport:
    """The problems of one file in an import (empty when the file is fine)."""

    path: str
    problems: list[Problem] = field(default_factory=list)


class ImportInvalid(DomainError, ValueError):
    """An import was refused as a whole; ``reports`` lists every failing file and rule."""

    code = "import_invalid"

    def __init__(self, reports: list[ImportFileReport]) -> None:
        self.reports = reports
        super().__init__(f"{len(reports)} file(s) failed validation; nothing was imported")

    @property
    def safe_message(self) -> str:
        problems = [f"{report.path}: {problem}" for report in self.reports for problem in report.problems]
        shown = "; ".join(problems[:50]) + (f"; and {len(problems) - 50} more" if len(problems) > 50 else "")
        return f"{self}: {shown}"


@dataclass
class ImportResult:
    """What an import did."""

    build: Build | None = None
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks: ChunkStats = field(default_factory=ChunkStats)


def validate_import_files(
    *,
    requester: Principal,
    files: Iterable[tuple[str, str]],
    approver: Principal | None = None,
    keep_unchanged: bool = True,
    unchanged_paths: list[str] | None = None,
) -> tuple[list[tuple[str, str, PageDocument]], list[ImportFileReport]]:
    """Check every file of an import: path, frontmatter, references, NUL, secrets, the
    requester's ``suggest`` and (when an approver is named) their ``approve``.

    Returns the valid files with their parsed documents and a report per failing file;
    writes nothing except the audit rows of secret refusals. The export's own files (its
    README, its captures, its originals: ``corpus.export.export_own_files``) are no pages and are passed
    over. A file the same as the live page the requester reads (``same_as_live``) asks
    nothing of anyone — an export re-imported with one page edited must not need ``suggest``
    on every page it carries — and with ``keep_unchanged=False`` it is left out (its path is
    added to ``unchanged_paths`` when given).
    """
    from corpus.export import export_folder, export_own_files
    from corpus.services import approver_ok

    files = list(files)
    for path, markdown in files:
        folder = export_folder(path, markdown)
        if folder is not None:  # every path is off by that folder: say so, not "no permission" on each
            problem = f"this is an export zipped inside its folder ({mask(folder)[0]}/): zip what is inside it instead"
            return [], [ImportFileReport("(import)", [Problem("files", problem)])]
    own = export_own_files(files)
    files = [(path, markdown) for path, markdown in files if path not in own]
    # Only pages the requester reads: that a file equals a page they cannot see is not theirs to learn.
    live = live_pages(Page.objects.visible_to(requester, "read"), [path for path, _ in files])
    # Compared as the requester reads them: their copy never named what is hidden from them
    # (a draft keeps those citations whatever its author writes).
    references = ReferenceFilter(requester, [frontmatter for _, frontmatter, _ in live.values()])
    pending: list[tuple[str, str, PageDocument]] = []
    reports: list[ImportFileReport] = []
    seen: set[str] = set()
    for path, markdown in files:
        report = ImportFileReport(path=mask(path)[0])  # the path itself may be what is refused
        if path in seen:
            report.problems.append(Problem("path", "appears twice in the import"))
        seen.add(path)
        try:
            # Files identical to their live page are not written again, so they need no second scan.
            same_bytes = path in live and live[path][0] == markdown_sha(markdown)
            document = page_validate(actor=requester, path=path, markdown=markdown, unchanged=same_bytes)
        except PageInvalid as invalid:
            report.problems.extend(invalid.problems)
        except (SecretRefused, NulRefused) as refusal:
            report.problems.append(Problem(refusal.field, str(refusal)))
        else:
            unchanged = same_as_live(live.get(path), markdown, document, shown=references.seen)
            if not unchanged:
                # Each principal is checked against the page only as they can see it: a page the
                # requester cannot read is answered as a free path (corpus.services.revision_create).
                existing = Page.objects.visible_to(requester, "read").filter(path=path).first()
                if not may_write(requester, document, existing, Permission.SUGGEST):
                    report.problems.append(Problem("permission", "the requester holds no suggest permission here"))
                seen_by_approver = (
                    Page.objects.visible_to(approver, "read").filter(path=path).first() if approver else None
                )
                if approver is not None and not approver_ok(approver, document, seen_by_approver):
                    report.problems.append(Problem("permission", "the approver may not approve this page"))
            if keep_unchanged or not unchanged:
                pending.append((path, markdown, document))
            elif unchanged_paths is not None:
                unchanged_paths.append(path)
        if report.problems:
            reports.append(report)
    return pending, reports


LivePage = tuple[str, dict[str, Any], str]  # (sha256, frontmatter, body) of a page's live revision


def live_pages(pages: QuerySet[Page], paths: list[str]) -> dict[str, LivePage]:
    """The live revision of each of ``paths`` among ``pages``, as ``same_as_live`` compares it."""
    rows = pages.filter(path__in=paths, current_revision__isnull=False).values_list(
        "path", "current_revision__sha256", "current_revision__frontmatter", "current_revision__body"
    )
    return {path: (sha, frontmatter, body) for path, sha, frontmatter, body in rows}


def same_as_live(
    live: LivePage | None,
    markdown: str,
    document: PageDocument,
    *,
    shown: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> bool:
    """Whether ``markdown`` is the live page again: the same bytes, or the same page read back.
    An export (or a mirror's clone) writes the frontmatter and body as the reader sees them
    (``shown``: the live frontmatter as they are shown it), not byte for byte as first written,
    and every page of its re-import was a new revision of nothing."""
    if live is None:
        return False
    sha, frontmatter, body = live
    return sha == markdown_sha(markdown) or (
        (shown(frontmatter) if shown is not None else frontmatter) == document.frontmatter
        and str(body).strip("\n") == document.body.strip("\n")
    )


def build_import(
    *, requester: Principal, approver: Principal, files: Iterable[tuple[str, str]], title: str = "Import"
) -> ImportResult:
    """Import ``(path, markdown)`` pairs as one import build, promoted by ``approver``.

    All or nothing: every file is validated first (path, frontmatter, references,
    secrets, the requester's ``suggest``, the approver's ``approve`` and the promotion
    blockers); if any fails, ``ImportInvalid`` lists every failing file and rule and
    nothing is written. A file identical to its live revision is left out, so a
    re-import computes no embedding. All new chunks are embedded in one batched call.
    """
    # "Unchanged" as validation decided it (the page as the requester reads it): a file left
    # unchecked as unchanged must never be written as a change.
    unchanged: list[str] = []
    pending, reports = validate_import_files(
        requester=requester, approver=approver, files=files, keep_unchanged=False, unchanged_paths=unchanged
    )
    same_person = isinstance(requester, Member) and isinstance(approver, Member) and requester.pk == approver.pk
    if same_person and not builds_settings()["ALLOW_SELF_APPROVAL"]:
        reports.append(
            ImportFileReport("(import)", [Problem("approver", "the requester cannot approve their own build")])
        )
    if reports:
        raise ImportInvalid(reports)

    result = ImportResult()
    live = live_pages(Page.objects.all(), [path for path, _, _ in pending])
    changed = pending
    result.unchanged = len(unchanged)
    if not changed:
        return result
    with transaction.atomic():
        build = build_open(actor=requester, title=title, kind=Build.Kind.IMPORT)
        # Embed every new chunk of the change in one batch, then draft page by page.
        chunked = {path: chunk_markdown(document.body) for path, _, document in changed}
        result.chunks.embedded = store_chunks(chunk for chunks in chunked.values() for chunk in chunks).embedded
        result.chunks.new = result.chunks.embedded
        for path, markdown, document in changed:
            revision, stats = revision_create(
                actor=requester, path=path, markdown=markdown, document=document, chunks=chunked[path]
            )
            BuildChange.objects.create(build=build, path=path, action=BuildChange.Action.WRITE, revision=revision)
            result.created += path not in live
            result.updated += path in live
            result.chunks.total += stats.total
        result.chunks.reused = result.chunks.total - result.chunks.new
        build.status = Build.Status.AWAITING_REVIEW
        build.submitted_at = timezone.now()
        build.save(update_fields=["status", "submitted_at", "updated_at"])
        build_promote(actor=approver, build=build, note="import")
        result.build = Build.objects.get(pk=build.pk)
    return result
