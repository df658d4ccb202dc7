"""Reads of builds: the promotion gate and who may see a build at all."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from builds.models import Build, BuildChange
from corpus.models import Page
from corpus.selectors import frontmatter_as_seen_by
from grants.models import Member, Permission
from grants.predicates import effective_permission
from grants.principals import Principal, SystemPrincipal


def build_promotion_blockers(*, build: Build, approver: Principal, once_submitted: bool = False) -> list[str]:
    """Everything that stops ``approver`` promoting ``build`` now; empty means it may.

    The review page shows this list to explain a disabled button, and ``build_promote``
    refuses while it is not empty, so the two cannot drift apart. ``once_submitted``
    leaves out the build's status (who *could* approve an open build once it is submitted).
    """
    from builds.services import builds_settings
    from corpus.services import approver_ok, document_from_revision, may_approve_live_page, unseen_replacement

    blockers: list[str] = []
    if build.status != Build.Status.AWAITING_REVIEW and not once_submitted:
        blockers.append(f"the build is not awaiting review (it is {build.get_status_display()})")
    if not isinstance(approver, SystemPrincipal) and not (
        isinstance(approver, Member) and approver.is_active and approver.user.is_active
    ):
        blockers.append("only an active member can approve a build")
        return blockers
    is_requester = (isinstance(approver, Member) and approver.pk == build.requester_id) or (
        isinstance(approver, SystemPrincipal) and build.requester_id is None and build.kind != Build.Kind.IMPORT
    )
    if is_requester and not builds_settings()["ALLOW_SELF_APPROVAL"]:
        blockers.append("the requester cannot approve their own build")
    changes = list(build.changes.select_related("revision").order_by("path"))
    captures = list(build.captures.select_related("source"))
    figures = list(build.figures.select_related("figure__page"))
    if not changes and not captures and not figures:
        blockers.append("the build has no changes")
    hidden = "the build changes pages you may not approve"  # never a path or a count
    for capture in captures:
        source = capture.source
        held = effective_permission(
            approver, path=source.scope_path, category=source.category, sensitivity=source.sensitivity
        )
        if held is None:
            if hidden not in blockers:
                blockers.append(hidden)
        elif held < Permission.APPROVE:
            blockers.append(f"capture:{source.key}: you do not hold approve on this capture")
    for recorded in figures:
        readable = (
            isinstance(approver, SystemPrincipal)
            or Page.objects.visible_to(approver, "read").filter(pk=recorded.figure.page_id).exists()
        )
        if not readable:
            if hidden not in blockers:
                blockers.append(hidden)
        elif not may_approve_live_page(approver, recorded.figure.page):
            blockers.append(
                f"{recorded.figure.page.path}: you may not approve figure {recorded.figure.key} on this page"
            )
    for change in changes:
        if not viewer_reads_change(approver, change):
            # Never name a page the approver cannot read, nor how many there are.
            if hidden not in blockers:
                blockers.append(hidden)
            continue
        live = (
            Page.objects.select_related("owner__user").filter(path=change.path, current_revision__isnull=False).first()
        )
        if change.action in ("delete", "move"):
            if live is None:
                blockers.append(f"{change.path}: is no longer a live page")
            elif not may_approve_live_page(approver, live):
                blockers.append(f"{change.path}: you may not approve taking this page out of the corpus")
            if change.action == "delete":
                continue
        if change.revision is None:
            continue
        target = change.revision.path  # a move's draft sits at its new path
        document = document_from_revision(change.revision)
        existing = (
            Page.objects.select_related("owner__user", "current_revision").filter(path=change.revision.path).first()
        )
        if unseen_replacement(change.revision, existing):
            assert existing is not None  # unseen_replacement is true only over a live page
            if Page.objects.visible_to(approver, "read").filter(pk=existing.pk).exists():
                blockers.append(f"{target}: its author cannot read the live page there; it would replace it unseen")
            elif hidden not in blockers:
                blockers.append(hidden)
            continue
        if not approver_ok(approver, document, existing):
            owner_rule = document.change_policy == "owner" or (
                existing is not None and existing.change_policy == "owner"
            )
            if owner_rule:
                owner = existing.owner.username if existing is not None else document.owner
                blockers.append(f"{target}: only its owner ({owner}) may approve it (change policy 'owner')")
            else:
                blockers.append(f"{target}: you do not hold approve on this page")
        if (
            existing is not None
            and existing.current_revision is not None
            and existing.current_revision.promoted_at is not None
            and existing.current_revision.promoted_at > change.revision.created_at
        ):
            blockers.append(f"{target}: the live page changed after this draft was written; draft it again")
    return blockers


def build_get_visible(*, principal: Principal | None, public_id: uuid.UUID | str) -> Build:
    """The build if ``principal`` is its requester, a participant, or holds approve on one of its pages.

    Anyone else gets ``Build.DoesNotExist`` — exactly as for an id that does not exist.
    """
    try:
        key = uuid.UUID(str(public_id))
    except ValueError:
        raise Build.DoesNotExist("build not found") from None
    build = Build.objects.filter(public_id=key).select_related("requester__user").first()
    if build is None or principal is None:
        raise Build.DoesNotExist("build not found")
    if isinstance(principal, SystemPrincipal):
        return build
    if isinstance(principal, Member) and (
        principal.pk == build.requester_id or build.participants.filter(pk=principal.pk).exists()
    ):
        return build
    if approves_any_part(principal, build):
        return build
    raise Build.DoesNotExist("build not found")


def approves_any_part(principal: Principal, build: Build) -> bool:
    """Whether ``principal`` may approve any part of ``build``: a page, a capture or a figure.

    A build that holds only captures or figures is reviewed by whoever holds approve on
    them (a capture's scope, a figure's page) — otherwise no one could ever see or promote it.
    """
    from corpus.services import document_from_revision, may_approve_live_page, may_write

    for change in build.changes.select_related("revision"):
        if change.revision is None:
            continue
        existing = Page.objects.filter(path=change.path).first()
        if may_write(principal, document_from_revision(change.revision), existing, Permission.APPROVE):
            return True
    for capture in build.captures.select_related("source"):
        source = capture.source
        held = effective_permission(
            principal, path=source.scope_path, category=source.category, sensitivity=source.sensitivity
        )
        if held is not None and held >= Permission.APPROVE:
            return True
    for recorded in build.figures.select_related("figure__page__owner__user"):
        page = recorded.figure.page
        if Page.objects.visible_to(principal, "read").filter(pk=page.pk).exists() and may_approve_live_page(
            principal, page
        ):
            return True
    return False


def build_list_awaiting_review(*, principal: Principal | None) -> list[Build]:
    """Builds awaiting review that ``principal`` could act on (approve at least one page)."""
    if principal is None:
        return []
    candidates: QuerySet[Build] = Build.objects.filter(status=Build.Status.AWAITING_REVIEW).select_related(
        "requester__user"
    )
    return [build for build in candidates if approves_any_part(principal, build)]


def _render_frontmatter(frontmatter: dict[str, object]) -> list[str]:
    import yaml

    return yaml.safe_dump(frontmatter, sort_keys=True, allow_unicode=True).splitlines()


def _as_lines(frontmatter: dict[str, object], body: str) -> list[str]:
    return ["---", *_render_frontmatter(frontmatter), "---", *body.splitlines()]


def viewer_reads_change(viewer: Principal | None, change: BuildChange) -> bool:
    """Whether ``viewer`` may read the page a change touches, as it is and as it will be.

    A build is visible to anyone approving one of its pages; the *other* pages' paths and
    content stay hidden from them unless their own grants allow reading them.
    """
    from corpus.services import document_from_revision, may_write

    if isinstance(viewer, SystemPrincipal):
        return True
    if viewer is None:
        return False
    # A live page the viewer cannot read counts as no page: a draft at its path is shown as
    # a new page (to its author, exactly as for a free path), a deletion not at all.
    live = Page.objects.visible_to(viewer, "read").filter(path=change.path).first()
    if change.revision is None:
        return live is not None
    existing = Page.objects.visible_to(viewer, "read").filter(path=change.revision.path).first()
    return may_write(viewer, document_from_revision(change.revision), existing, Permission.READ)


def visible_drafts(*, build: Build, viewer: Principal | None) -> dict[str, list[Any]]:
    """The build's draft captures and figure values that ``viewer`` could read once live."""
    captures = []
    for capture in build.captures.select_related("source"):
        source = capture.source
        held = effective_permission(
            viewer, path=source.scope_path, category=source.category, sensitivity=source.sensitivity
        )
        if held is not None:
            captures.append(source)
    figures = [
        recorded.figure
        for recorded in build.figures.select_related("figure__page")
        if viewer is not None and Page.objects.visible_to(viewer, "read").filter(pk=recorded.figure.page_id).exists()
    ]
    return {"captures": captures, "figures": figures}


def build_diff(*, build: Build, viewer: Principal | None) -> list[dict[str, object]]:
    """Per change ``viewer`` may read: path, action, a unified diff (frontmatter, then body)
    against the page it replaces, and its sources. Changes to pages the viewer cannot read
    are left out entirely (no path, no count). After promotion the diff is the approved one.

    Call only with a build already obtained through ``build_get_visible``.
    """
    import difflib

    from builds.review import change_pairs

    result: list[dict[str, object]] = []
    for pair in change_pairs(build=build, viewer=viewer):
        new_revision = pair.new if pair.action != BuildChange.Action.DELETE else None
        old = (
            _as_lines(frontmatter_as_seen_by(pair.old.frontmatter, viewer), pair.old.body)
            if pair.old is not None
            else []
        )
        new = (
            _as_lines(frontmatter_as_seen_by(new_revision.frontmatter, viewer), new_revision.body)
            if new_revision is not None
            else []
        )
        diff = list(
            difflib.unified_diff(old, new, fromfile=f"live/{pair.path}", tofile=f"draft/{pair.path}", lineterm="")
        )
        sources = (
            list(frontmatter_as_seen_by(new_revision.frontmatter, viewer).get("sources", []))
            if new_revision is not None
            else []
        )
        result.append(
            {"path": pair.path, "action": pair.action, "is_new": pair.old is None, "diff": diff, "sources": sources}
        )
    return result


def build_summary(*, build: Build, viewer: Principal | None) -> dict[str, object]:
    """The JSON shape of a build for the API (ids are public ids only), as ``viewer`` may see it."""
    drafts = visible_drafts(build=build, viewer=viewer)
    return {
        "id": str(build.public_id),
        "title": build.title,
        "purpose": build.purpose,
        "kind": build.kind,
        "status": build.status,
        "requester": build.requester.username if build.requester is not None else "system",
        "changes": [
            {"path": change.path, "action": change.action}
            for change in build.changes.select_related("revision").order_by("path")
            if viewer_reads_change(viewer, change)
        ],
        "captures": [f"capture:{source.key}" for source in drafts["captures"]],
        "figures": [figure.key for figure in drafts["figures"]],
        "blockers": build_promotion_blockers(build=build, approver=viewer) if viewer is not None else [],
    }
