"""Reads of builds: the promotion gate and who may see a build at all."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from brain.rows import columns, fetch_one, hydrate
from builds.models import Build, BuildCapture, BuildChange, BuildFigure, Promotion
from corpus.models import Page, Revision
from corpus.selectors import ReferenceFilter, frontmatter_references, sha256_as_seen
from grants.models import Member, Permission, Sensitivity
from grants.predicates import effective_permissions, holds_any
from grants.principals import Principal, SystemPrincipal


@dataclass(frozen=True)
class BuildParts:
    """A build's page changes, draft captures and draft figures, read once."""

    changes: list[BuildChange]
    captures: list[BuildCapture]
    figures: list[BuildFigure]  # recorded as draft figures (on live pages)
    pending: list[BuildFigure]  # values for pages new in the build, recorded at promotion


def _changes_with_revisions(build: Build) -> list[BuildChange]:
    """The build's changes by path, each with its draft revision — hand-written (brain.rows):
    every build page reads them, and the ORM took longer to compile this than to run it."""
    sql = f"""SELECT {columns(BuildChange, "c")}, {columns(Revision, "r")}
                FROM builds_buildchange c LEFT JOIN corpus_revision r ON r.id = c.revision_id
               WHERE c.build_id = %s ORDER BY c.path"""
    changes: list[BuildChange] = []
    with connection.cursor() as cursor:
        cursor.execute(sql, (build.pk,))
        for row in cursor.fetchall():
            change, revision = hydrate(row, [BuildChange, Revision])
            change.revision = revision if change.revision_id is not None else None  # type: ignore[attr-defined]
            changes.append(change)  # type: ignore[arg-type]
    return changes


def build_parts(build: Build) -> BuildParts:
    """The parts of ``build``, read once per instance (a page asks several selectors about them).

    Cached on the instance: a view's build lives for one request, and writes lock a fresh row
    (``builds.services._lock``), so the promotion gate inside a write always reads anew.
    """
    cached: BuildParts | None = getattr(build, "_parts", None)
    if cached is None:
        # has_captures/has_figures: known when the build was read by build_get_visible.
        figures = (
            list(build.figures.select_related("figure__page__owner__user"))
            if getattr(build, "has_figures", True)
            else []
        )
        cached = BuildParts(
            changes=_changes_with_revisions(build),
            captures=list(build.captures.select_related("source")) if getattr(build, "has_captures", True) else [],
            figures=[item for item in figures if item.figure_id is not None],
            pending=[item for item in figures if item.figure_id is None],
        )
        build._parts = cached  # type: ignore[attr-defined]
    return cached


def _viewer_key(viewer: Principal | None) -> object:
    if isinstance(viewer, SystemPrincipal):
        return "system"
    return (type(viewer).__name__, getattr(viewer, "pk", None))


def held_on(viewer: Principal | None, build: Build, objects: list[tuple[str, str | None, int]]) -> list[int | None]:
    """``effective_permissions`` of ``viewer`` on ``objects``, remembered on ``build`` per viewer.

    The selectors of one build page (who may see it, what each change shows, what blocks its
    promotion) weigh the same objects; each is sent to the access predicate once.
    """
    known: dict[tuple[str, str | None, int], int | None] = build.__dict__.setdefault("_held", {}).setdefault(
        _viewer_key(viewer), {}
    )
    missing = [item for item in dict.fromkeys(objects) if item not in known]
    if missing:
        known.update(zip(missing, effective_permissions(viewer, missing), strict=True))
    return [known[item] for item in objects]


def drafts_held(viewer: Principal | None, build: Build) -> tuple[list[int | None], list[int | None]]:
    """``viewer``'s permission on each draft capture's scope and each draft figure's page, in
    one predicate call (read fresh each time, as the promotion gate always did for these)."""
    parts = build_parts(build)
    held = effective_permissions(
        viewer,
        [(item.source.scope_path, item.source.category, int(item.source.sensitivity)) for item in parts.captures]
        + [
            (item.draft.page.path, item.draft.page.category, int(item.draft.page.sensitivity)) for item in parts.figures
        ],
    )
    return held[: len(parts.captures)], held[len(parts.captures) :]


def pages_at(build: Build) -> dict[str, Page]:
    """Every page row (live or retired, visible or not) at a path ``build`` touches, with its
    owner and current revision; read once per instance. Never shown as such: callers weigh
    each row through ``held_on`` first."""
    cached: dict[str, Page] | None = build.__dict__.get("_pages_at")
    if cached is None:
        changes = build_parts(build).changes
        paths = {change.path for change in changes} | {
            change.revision.path for change in changes if change.revision is not None
        }
        cached = {
            page.path: page
            for page in Page.objects.select_related("owner__user", "current_revision").filter(path__in=paths)
        }
        build.__dict__["_pages_at"] = cached
    return cached


def build_promotion_blockers(*, build: Build, approver: Principal, once_submitted: bool = False) -> list[str]:
    """Everything that stops ``approver`` promoting ``build`` now; empty means it may.

    The review page shows this list to explain a disabled button, and ``build_promote``
    refuses while it is not empty, so the two cannot drift apart. ``once_submitted``
    leaves out the build's status (who *could* approve an open build once it is submitted).
    """
    from builds.services import builds_settings

    blockers: list[str] = []
    if build.status != Build.Status.AWAITING_REVIEW and not once_submitted:
        blockers.append(f"the build is not awaiting review (it is {build.get_status_display()})")
        if build.is_terminal:
            # Decided (promoted, rejected, withdrawn, failed): nothing else applies. Judged on,
            # a promoted build's drafts read as "the live page changed after this draft was
            # written; draft it again" — the change being its own promotion (a double submit).
            return blockers
    if not isinstance(approver, SystemPrincipal) and not (
        isinstance(approver, Member) and approver.is_active and approver.user.is_active
    ):
        blockers.append("only an active member can approve a build")
        return blockers
    is_requester = (isinstance(approver, Member) and approver.pk == build.requester_id) or (
        isinstance(approver, SystemPrincipal) and build.requester_id is None and build.kind != Build.Kind.IMPORT
    )
    parts = build_parts(build)
    changes, captures, figures = parts.changes, parts.captures, parts.figures
    # Who wrote a draft is its author whoever requests the build now: a build handed on at a
    # suspension keeps its first requester's drafts, and they must not approve them either.
    authored = isinstance(approver, Member) and any(
        change.revision is not None and change.revision.author_id == approver.pk for change in changes
    )
    if (is_requester or authored) and not builds_settings()["ALLOW_SELF_APPROVAL"]:
        blockers.append(
            "the requester cannot approve their own build"
            if is_requester
            else "you wrote drafts in this build: someone else must approve it"
        )
        # That is the whole answer for them: the per-page reasons would differ between a draft
        # over a live page they cannot read and one on a free path, telling them it exists.
        return blockers
    if not changes and not captures and not figures:
        blockers.append("the build has no changes")
    hidden = "the build changes pages you may not approve"  # never a path or a count
    system = isinstance(approver, SystemPrincipal)
    capture_held, figure_held = drafts_held(approver, build)
    for capture, best in zip(captures, capture_held, strict=True):
        if best is None:
            if hidden not in blockers:
                blockers.append(hidden)
        elif best < Permission.APPROVE:
            blockers.append(f"capture:{capture.source.key}: you do not hold approve on this capture")
    for recorded, best in zip(figures, figure_held, strict=True):
        page = recorded.draft.page
        live = page.current_revision_id is not None
        if not system and (not live or best is None):  # a page they cannot read: never named
            if hidden not in blockers:
                blockers.append(hidden)
        elif not system and not (  # may_approve_live_page, on the weighed row
            best is not None
            and best >= Permission.APPROVE
            and (
                page.change_policy != "owner"
                or not page.owner.binds_as_owner
                or (isinstance(approver, Member) and approver.pk == page.owner_id)
            )
        ):
            blockers.append(f"{page.path}: you may not approve figure {recorded.draft.key} on this page")
    blockers.extend(_figure_blockers(approver, build, hidden=hidden, already=blockers))
    blockers.extend(_change_blockers(approver, build, hidden=hidden, already=blockers))
    return blockers


def _figure_blockers(approver: Principal, build: Build, *, hidden: str, already: list[str]) -> list[str]:
    """What the figure values add to ``build_promotion_blockers``: each value held for a page
    the build creates must still be for a page it writes, one the approver reads (its change
    is approved with the page); and a capture a value cites — a draft's or a held one's —
    must be the build's own or readable by the approver, as a page draft's citations must.
    At most two queries, however many values."""
    from corpus.models import Source

    if isinstance(approver, SystemPrincipal):
        return []
    parts = build_parts(build)
    blockers: list[str] = []

    def block(reason: str) -> None:
        if reason not in blockers and reason not in already:
            blockers.append(reason)

    written = {
        change.revision.path: change
        for change in parts.changes
        if change.revision is not None and change.action != BuildChange.Action.DELETE
    }
    readable = readable_changes(approver, build) if parts.pending else set()
    own_sources = {recorded.source_id for recorded in parts.captures}
    own_keys = {recorded.source.key for recorded in parts.captures}
    cited_ids = {
        recorded.figure.source_id
        for recorded in parts.figures
        if recorded.figure is not None and recorded.figure.source_id is not None
    } - own_sources
    cited_keys: set[str] = set()
    for item in parts.pending:
        held: dict[str, Any] = item.pending or {}
        change = written.get(str(held.get("page_path", "")))
        if change is None:
            # The change that wrote its page was replaced: the value would land on a page this
            # build no longer brings, unreviewed. Neither the page nor the key is named.
            block("a figure value this build holds is for a page it no longer writes; record it again")
        elif change.pk not in readable:
            block(hidden)
        if held.get("source_key") and held["source_key"] not in own_keys:
            cited_keys.add(str(held["source_key"]))
    if cited_ids or cited_keys:
        seen = Source.objects.visible_to(approver, "read")
        seen_ids = set(seen.filter(pk__in=cited_ids).values_list("pk", flat=True)) if cited_ids else set()
        seen_keys = set(seen.filter(key__in=cited_keys).values_list("key", flat=True)) if cited_keys else set()
        if cited_ids - seen_ids or cited_keys - seen_keys:
            block("a figure value cites a capture you cannot read; someone who can must approve it")
    return blockers


def _change_blockers(approver: Principal, build: Build, *, hidden: str, already: list[str]) -> list[str]:
    """The page changes' part of ``build_promotion_blockers``, read in a constant number of queries.

    The rules are those of ``revision_promote``/``page_retire`` (approve on the draft as it will
    be and on the page now, the owner rule, no unseen replacement, no stale draft), evaluated
    on data fetched once for all changes: the build's review page must not cost a query per file.
    """
    from corpus.services import document_from_revision

    blockers: list[str] = []

    def block(reason: str) -> None:
        if reason not in blockers and reason not in already:
            blockers.append(reason)

    parts = build_parts(build)
    changes = parts.changes
    readable = readable_changes(approver, build)
    pages = pages_at(build)
    documents = {change.pk: document_from_revision(change.revision) for change in changes if change.revision}
    # What the build brings itself may be cited by its pages (approved with them); anything else
    # a draft cites must be readable by the approver, or they would promote what they never saw.
    own_captures = {recorded.source.key for recorded in parts.captures}
    own_pages = {change.revision.path for change in changes if change.revision is not None}
    references = ReferenceFilter(approver, [document.frontmatter for document in documents.values()])
    owners = {document.owner for document in documents.values()}
    active_owners = set(
        Member.objects.filter(user__username__in=owners, is_active=True, user__is_active=True).values_list(
            "user__username", flat=True
        )
    )
    targets = Counter(change.revision.path for change in changes if change.revision is not None)
    objects: list[tuple[str, str | None, int]] = []
    for change in changes:
        live = pages.get(change.path)
        if live is not None:
            objects.append((live.path, live.category, int(live.sensitivity)))
        if change.pk in documents:
            document = documents[change.pk]
            objects.append((document.path, document.category, int(document.sensitivity)))
            existing = pages.get(document.path)
            if existing is not None:
                objects.append((existing.path, existing.category, int(existing.sensitivity)))
    held = dict(zip(objects, held_on(approver, build, objects), strict=True))
    system = isinstance(approver, SystemPrincipal)

    def approves(path: str, category: str | None, sensitivity: int) -> bool:
        best = held[(path, category, int(sensitivity))]
        return best is not None and best >= Permission.APPROVE

    def approves_live(page: Page) -> bool:  # may_approve_live_page, on the fetched rows
        if system:
            return True
        if page.current_revision_id is None or not approves(page.path, page.category, page.sensitivity):
            return False
        return (
            page.change_policy != "owner"
            or not page.owner.binds_as_owner
            or (isinstance(approver, Member) and approver.pk == page.owner_id)
        )

    authors_reading: dict[int, set[str]] = {}

    def author_reads(author_id: int, path: str) -> bool:  # unseen_replacement, one query per author
        if author_id not in authors_reading:
            # The predicate needs only the member's id: its SQL checks the member is active.
            author = Member(pk=author_id)
            live = [page for page in pages.values() if page.current_revision_id is not None]
            held_by_author = effective_permissions(author, [(p.path, p.category, p.sensitivity) for p in live])
            authors_reading[author_id] = {
                p.path for p, best in zip(live, held_by_author, strict=True) if best is not None
            }
        return path in authors_reading[author_id]

    for change in changes:
        if change.pk not in readable:
            block(hidden)  # never name a page the approver cannot read, nor how many there are
            continue
        live = pages.get(change.path)
        if live is not None and live.current_revision_id is None:
            live = None
        if change.action in ("delete", "move"):
            proposed_at = change.written_at
            if live is None:
                block(f"{change.path}: is no longer a live page")
            elif not approves_live(live):
                block(f"{change.path}: you may not approve taking this page out of the corpus")
            elif _promoted_after(live, proposed_at):
                # Moving or deleting it now would carry away (or drop) the edit made since.
                block(f"{change.path}: the live page changed after this {change.action} was proposed; propose it again")
            if change.action == "delete":
                continue
        if change.revision is None:
            continue
        document = documents[change.pk]
        target = change.revision.path  # a move's draft sits at its new path
        if targets[target] > 1:
            block(f"{target}: more than one change in this build writes this path; keep one")
        existing = pages.get(target)
        if (
            existing is not None
            and existing.current_revision_id is not None
            and not system
            and held[(existing.path, existing.category, int(existing.sensitivity))] is None
        ):
            # A live page the approver cannot read sits where the draft goes: the generic
            # reason, never its owner, its policy or its history (those named it).
            block(hidden)
            continue
        if (
            existing is not None
            and existing.current_revision_id is None
            and change.action == "write"
            and existing.updated_at > change.written_at
        ):
            # Retired after this draft was written (over it, or beside it): promoting would bring
            # back a page someone has just taken out, unseen.
            block(f"{target}: the page was taken out of the corpus after this draft was written; draft it again")
        related, sources = frontmatter_references(document.frontmatter)
        shown = references.seen(document.frontmatter)
        # What the live page (a move: the page it moves) already cites is carried, not added:
        # the diff shows no change there, and an approver who cannot read an old citation must
        # still be able to approve an edit of the text around it.
        base = existing if existing is not None else (live if change.action == "move" else None)
        cited_before: set[str] = set()
        if base is not None and base.current_revision is not None:
            for references_before in frontmatter_references(base.current_revision.frontmatter):
                cited_before.update(references_before)
        unseen_related = set(related) - set(shown.get("related", [])) - own_pages - cited_before
        unseen_sources = {item for item in set(sources) - set(shown.get("sources", []))
                          if item.removeprefix("capture:") not in own_captures} - cited_before  # fmt: skip
        if unseen_related or unseen_sources:
            # Never which, nor how many: the approver cannot read them (or they are gone).
            block(f"{target}: it adds citations of pages or captures you cannot read; someone who can must approve it")
        if document.owner not in active_owners:
            block(f"{target}: its owner ({document.owner}) is not an active member; draft it with another owner")
        unseen = (
            existing is not None
            and existing.current_revision_id is not None
            and change.revision.author_id is not None
            and not author_reads(change.revision.author_id, existing.path)
        )
        if unseen:
            assert existing is not None
            reader_sees_it = system or (Page.objects.visible_to(approver, "read").filter(pk=existing.pk).exists())
            # An author suspended since (their build handed on) reads nothing: say that, not
            # that they could never read the page. (Only here, so a review page pays nothing.)
            author_id = change.revision.author_id
            assert author_id is not None  # unseen is judged only for an authored draft
            author_left = not Member.objects.filter(pk=author_id, is_active=True, user__is_active=True).exists()
            block(
                hidden
                if not reader_sees_it
                else f"{target}: its author is no longer an active member, so this draft cannot vouch for the "
                "live page it replaces; reject the build and draft the page again"
                if author_left
                else f"{target}: its author cannot read the live page there; it would replace it unseen"
            )
            continue
        may = approves(document.path, document.category, document.sensitivity) and (
            existing is None or approves(existing.path, existing.category, existing.sensitivity)
        )
        owner_rule = (
            document.change_policy == "owner" or (existing is not None and existing.change_policy == "owner")
        ) and (existing is None or existing.owner.binds_as_owner)
        owner = existing.owner.username if existing is not None else document.owner
        if may and owner_rule and not system and not (isinstance(approver, Member) and approver.username == owner):
            may = False
        if not may:
            if owner_rule and not system:
                block(f"{target}: only its owner ({owner}) may approve it (change policy 'owner')")
            else:
                block(f"{target}: you do not hold approve on this page")
        if existing is not None and _promoted_after(existing, change.written_at):
            block(f"{target}: the live page changed after this draft was written; draft it again")
    return blockers


def _promoted_after(page: Page, moment: Any) -> bool:
    """Whether ``page``'s live revision was promoted after ``moment`` (a draft or proposal)."""
    current = page.current_revision if page.current_revision_id is not None else None
    return current is not None and current.promoted_at is not None and current.promoted_at > moment


def _build_from_row(row: tuple[Any, ...]) -> Build:
    """A build with its requester and the requester's user, from ``columns`` of the three."""
    User = get_user_model()
    build, requester, user = hydrate(row, [Build, Member, User])
    if build.requester_id is not None:  # type: ignore[attr-defined]
        requester.user = user  # type: ignore[attr-defined]
        build.requester = requester  # type: ignore[attr-defined]
    else:
        build.requester = None  # type: ignore[attr-defined]
    return build  # type: ignore[return-value]


def _build_by_public_id(key: uuid.UUID, *, viewer: Member | None) -> Build | None:
    """The build with its requester (and user), and whether it has captures, figures and
    ``viewer`` as a participant — one hand-written query (every build page starts here; the
    ORM spent longer compiling this than the database running it)."""
    User = get_user_model()
    sql = f"""SELECT {columns(Build, "b")}, {columns(Member, "m")}, {columns(User, "u")},
                     EXISTS (SELECT 1 FROM builds_buildcapture c WHERE c.build_id = b.id),
                     EXISTS (SELECT 1 FROM builds_buildfigure f WHERE f.build_id = b.id),
                     EXISTS (SELECT 1 FROM builds_build_participants bp WHERE bp.build_id = b.id AND bp.member_id = %s)
                FROM builds_build b
                LEFT JOIN grants_member m ON m.id = b.requester_id
                LEFT JOIN {User._meta.db_table} u ON u.id = m.user_id
               WHERE b.public_id = %s"""
    row = fetch_one(sql, (viewer.pk if viewer is not None else None, key))
    if row is None:
        return None
    build = _build_from_row(row)
    has_captures, has_figures, participates = row[-3:]
    build.has_captures = has_captures  # type: ignore[attr-defined]
    build.has_figures = has_figures  # type: ignore[attr-defined]
    if viewer is not None:
        build.__dict__["_participants_known"] = {viewer.pk: participates}
    return build  # type: ignore[return-value]


def build_get_visible(*, principal: Principal | None, public_id: uuid.UUID | str) -> Build:
    """The build if ``principal`` is its requester, a participant, or holds approve on one of its pages.

    Anyone else gets ``Build.DoesNotExist`` — exactly as for an id that does not exist.
    """
    try:
        key = uuid.UUID(str(public_id))
    except ValueError:
        raise Build.DoesNotExist("build not found") from None
    if principal is None:
        raise Build.DoesNotExist("build not found")
    build = _build_by_public_id(key, viewer=principal if isinstance(principal, Member) else None)
    if build is None:
        raise Build.DoesNotExist("build not found")
    if isinstance(principal, SystemPrincipal):
        return build
    if isinstance(principal, Member) and is_requester_or_participant(principal, build):
        return build
    if approves_any_part(principal, build):
        return build
    raise Build.DoesNotExist("build not found")


def is_requester_or_participant(member: Member, build: Build) -> bool:
    """Whether ``member`` opened ``build`` or takes part in it (remembered on the instance)."""
    if member.pk == build.requester_id:
        return True
    known: dict[int, bool] = build.__dict__.setdefault("_participants_known", {})
    if member.pk not in known:
        known[member.pk] = build.participants.filter(pk=member.pk).exists()
    return known[member.pk]


def approves_any_part(principal: Principal, build: Build) -> bool:
    """Whether ``principal`` may approve any part of ``build``: a page, a capture or a figure.

    A build that holds only captures or figures is reviewed by whoever holds approve on
    them (a capture's scope, a figure's page) — otherwise no one could ever see or promote it.
    """
    return build.pk in builds_approvable_by(principal, [build], one_build_page=True)


def builds_approvable_by(principal: Principal | None, builds: list[Build], *, one_build_page: bool = False) -> set[int]:
    """Ids of the ``builds`` of which ``principal`` may approve at least one part.

    Two queries however many builds: one hand-written read of every object the rule weighs
    (each draft as it will be, the page now at its path, each capture, each figure's page),
    then one ``effective_permissions`` call for all of them. On ``one_build_page`` (a single
    build's own page) it reads the build's cached parts and permissions instead, which the
    rest of that page reads anyway. The rule:
    - a page change: approve on the draft as it will be and on the page at its path now;
    - a capture: approve on its scope;
    - a figure: approve on its live page, and ownership when the page's policy is ``owner``.
    """
    if principal is None or not builds:
        return set()
    user_table = get_user_model()._meta.db_table
    sql = f"""SELECT c.build_id, 'change', r.path, r.frontmatter->>'category', r.frontmatter->>'sensitivity',
                    p.path, p.category, p.sensitivity, NULL::varchar, NULL::bigint, NULL::bigint
               FROM builds_buildchange c
               JOIN corpus_revision r ON r.id = c.revision_id
               LEFT JOIN corpus_page p ON p.path = c.path
              WHERE c.build_id = ANY(%s)
             UNION ALL
             SELECT bc.build_id, 'capture', s.scope_path, s.category, NULL, NULL, NULL, s.sensitivity,
                    NULL, NULL, NULL
               FROM builds_buildcapture bc JOIN corpus_source s ON s.id = bc.source_id
              WHERE bc.build_id = ANY(%s)
             UNION ALL
             SELECT bf.build_id, 'figure', p.path, p.category, NULL, NULL, NULL, p.sensitivity,
                    p.change_policy,
                    -- the owner only while the owner rule binds them (Member.binds_as_owner)
                    CASE WHEN om.is_active AND ou.is_active THEN p.owner_id::bigint END,
                    p.current_revision_id::bigint
               FROM builds_buildfigure bf
               JOIN corpus_figure f ON f.id = bf.figure_id
               JOIN corpus_page p ON p.id = f.page_id
               JOIN grants_member om ON om.id = p.owner_id
               JOIN {user_table} ou ON ou.id = om.user_id
              WHERE bf.build_id = ANY(%s)"""
    if one_build_page:
        rows = _approval_rows_of(builds[0])  # one build's page: from the parts its other selectors read
    else:
        ids = [build.pk for build in builds]
        with connection.cursor() as cursor:
            cursor.execute(sql, (ids, ids, ids))
            rows = cursor.fetchall()

    objects: list[tuple[str, str | None, int]] = []
    # (build id, indexes of the objects that must all reach approve, owner check passed)
    claims: list[tuple[int, list[int], bool]] = []

    def described(path: str, category: str | None, sensitivity: int) -> int:
        objects.append((path, category, int(sensitivity)))
        return len(objects) - 1

    for (
        build_id,
        kind,
        path,
        category,
        sensitivity_name,
        page_path,
        page_category,
        sensitivity,
        policy,
        owner,
        live,
    ) in rows:
        if kind == "change":
            # The draft as it will be: what document_from_revision reads from its frontmatter.
            needed = [described(path, category, Sensitivity.from_name(sensitivity_name or "ordinary"))]
            if page_path is not None:
                needed.append(described(page_path, page_category, sensitivity))
            claims.append((build_id, needed, True))
        elif kind == "capture":
            claims.append((build_id, [described(path, category, sensitivity)], True))
        else:
            owner_ok = (
                isinstance(principal, SystemPrincipal)
                or policy != "owner"
                or owner is None  # the owner no longer binds (Member.binds_as_owner)
                or (isinstance(principal, Member) and principal.pk == owner)
            )
            claims.append((build_id, [described(path, category, sensitivity)], owner_ok and live is not None))
    held = held_on(principal, builds[0], objects) if one_build_page else effective_permissions(principal, objects)
    return {
        build_id
        for build_id, needed, ok in claims
        if ok and all(held[index] is not None and held[index] >= Permission.APPROVE for index in needed)  # type: ignore[operator]
    }


def _approval_rows_of(build: Build) -> list[tuple[Any, ...]]:
    """The rows of ``builds_approvable_by``'s query for one build, from its cached parts and pages."""
    parts, pages = build_parts(build), pages_at(build)
    rows: list[tuple[Any, ...]] = []
    for change in parts.changes:
        if change.revision is None:
            continue
        meta = change.revision.frontmatter
        page = pages.get(change.path)
        category = meta.get("category")
        rows.append(
            (build.pk, "change", change.revision.path, None if category is None else str(category),
             None if meta.get("sensitivity") is None else str(meta["sensitivity"]),
             page.path if page else None, page.category if page else None, page.sensitivity if page else None,
             None, None, None)
        )  # fmt: skip
    for capture in parts.captures:
        source = capture.source
        rows.append(
            (build.pk, "capture", source.scope_path, source.category, None, None, None, source.sensitivity,
             None, None, None)
        )  # fmt: skip
    for recorded in parts.figures:
        figure_page = recorded.draft.page
        rows.append(
            (build.pk, "figure", figure_page.path, figure_page.category, None, None, None, figure_page.sensitivity,
             figure_page.change_policy, figure_page.owner_id if figure_page.owner.binds_as_owner else None,
             figure_page.current_revision_id)
        )  # fmt: skip
    return rows


def build_list_awaiting_review(*, principal: Principal | None) -> list[Build]:
    """Every build awaiting review that ``principal`` could act on (approve at least one part),
    newest first. Weighs them all: pages show one page of them (``builds_awaiting_page``)."""
    return builds_awaiting_page(principal=principal, limit=None).builds


@dataclass(frozen=True)
class AwaitingPage:
    """One page of the builds awaiting ``principal``'s review, newest first."""

    builds: list[Build]
    more: bool  # whether a further build awaiting their review comes after the last one listed


# Builds weighed per round while filling a page: the first round is twice the page, each next
# one twice the last, up to this many (a page whose reader may approve few builds among many).
AWAITING_BATCH_MAX = 500


def builds_awaiting_page(
    *,
    principal: Principal | None,
    limit: int | None,
    after: Build | None = None,
    exclude_requester: Member | None = None,
    want_more: bool = True,
) -> AwaitingPage:
    """Up to ``limit`` builds awaiting review that ``principal`` could act on, newest first
    (``submitted_at`` descending, then id), starting after the build ``after`` when given.

    The candidates are read newest first in rounds, each weighed by ``builds_approvable_by``
    (three queries a round), and reading stops once the page is full (with ``want_more``: once
    one more is found, so ``more`` is exact): a home page showing eight no longer weighs every
    build awaiting anyone. ``exclude_requester`` leaves out that member's own builds (the home
    page lists them apart). ``limit=None`` weighs every candidate.
    """
    if principal is None or limit == 0:
        return AwaitingPage([], False)
    if not holds_any(principal, Permission.APPROVE):
        # One who may approve nothing would weigh every awaiting build to find none (4,750
        # builds: about a second of every home page).
        return AwaitingPage([], False)
    User = get_user_model()
    where = ["b.status = %s"]
    params: list[Any] = [Build.Status.AWAITING_REVIEW]
    if exclude_requester is not None:
        where.append("b.requester_id IS DISTINCT FROM %s")
        params.append(exclude_requester.pk)
    position: tuple[Any, int] | None = (after.submitted_at, after.pk) if after is not None else None
    wanted = None if limit is None else limit + (1 if want_more else 0)
    batch = 64 if limit is None else max(2 * limit, 8)
    found: list[Build] = []
    while True:
        keyset, keyset_params = "", []
        if position is not None:
            # After the last one read, in the order ``submitted_at DESC NULLS LAST, id DESC``.
            if position[0] is None:
                keyset, keyset_params = "AND b.submitted_at IS NULL AND b.id < %s", [position[1]]
            else:
                keyset = ("AND (b.submitted_at < %s OR (b.submitted_at = %s AND b.id < %s)"
                          " OR b.submitted_at IS NULL)")  # fmt: skip
                keyset_params = [position[0], position[0], position[1]]
        size = batch if limit is not None else None
        sql = f"""SELECT {columns(Build, "b")}, {columns(Member, "m")}, {columns(User, "u")}
                    FROM builds_build b
                    LEFT JOIN grants_member m ON m.id = b.requester_id
                    LEFT JOIN {User._meta.db_table} u ON u.id = m.user_id
                   WHERE {" AND ".join(where)} {keyset}
                   ORDER BY b.submitted_at DESC NULLS LAST, b.id DESC
                   {"LIMIT %s" if size is not None else ""}"""
        with connection.cursor() as cursor:  # every home page runs this: hand-written (brain.rows)
            cursor.execute(sql, (*params, *keyset_params, *([size] if size is not None else [])))
            candidates = [_build_from_row(row) for row in cursor.fetchall()]
        if candidates:
            approvable = builds_approvable_by(principal, candidates)
            found.extend(build for build in candidates if build.pk in approvable)
        if wanted is not None and len(found) >= wanted:
            break
        if size is None or len(candidates) < size:
            break  # no candidate left
        position = (candidates[-1].submitted_at, candidates[-1].pk)
        batch = min(batch * 2, max(AWAITING_BATCH_MAX, batch))
    if limit is None:
        return AwaitingPage(found, False)
    return AwaitingPage(found[:limit], len(found) > limit)


def _render_frontmatter(frontmatter: dict[str, object]) -> list[str]:
    import yaml

    return yaml.safe_dump(frontmatter, sort_keys=True, allow_unicode=True).splitlines()


def _as_lines(frontmatter: dict[str, object], body: str) -> list[str]:
    return ["---", *_render_frontmatter(frontmatter), "---", *body.splitlines()]


def readable_changes(viewer: Principal | None, build: Build) -> set[int]:
    """Ids of ``build``'s changes ``viewer`` may read, from the build's cached pages and permissions.

    A build is visible to anyone approving one of its pages; the *other* pages' paths and
    content stay hidden from them unless their own grants allow reading them. A live page the
    viewer cannot read counts as no page: a draft at its path is shown as a new page (to its
    author, exactly as for a free path), a deletion not at all. A draft is readable when the
    viewer holds read on it as it will be (the page now at its path, if they can see it, they
    read by definition).
    """
    from corpus.services import document_from_revision

    changes = build_parts(build).changes
    if isinstance(viewer, SystemPrincipal):
        return {change.pk for change in changes}
    if viewer is None:
        return set()
    pages = pages_at(build)
    weighed: list[tuple[int, tuple[str, str | None, int]]] = []  # (change id, an object it shows)
    unreadable: set[int] = set()
    for change in changes:
        page = pages.get(change.path)
        if change.revision is None:  # a deletion: readable when the live page there is
            if page is not None and page.current_revision_id is not None:
                weighed.append((change.pk, (page.path, page.category, int(page.sensitivity))))
            else:
                unreadable.add(change.pk)
            continue
        document = document_from_revision(change.revision)
        weighed.append((change.pk, (document.path, document.category, int(document.sensitivity))))
        if change.action == BuildChange.Action.MOVE:
            # A move shows where the page comes from and what it holds: the page it moves must
            # be readable too (a move out of hr/ showed hr/'s path and text to a topics/ approver).
            # The row stays when the move retires the page: weighed as it was (a promoted
            # build's approved diff stays visible to whoever could read both ends).
            if page is None:
                unreadable.add(change.pk)
            else:
                weighed.append((change.pk, (page.path, page.category, int(page.sensitivity))))
    held = held_on(viewer, build, [item for _, item in weighed])  # one query for them all
    unreadable |= {change_id for (change_id, _), best in zip(weighed, held, strict=True) if best is None}
    return {change_id for change_id, _ in weighed} - unreadable


def visible_drafts(*, build: Build, viewer: Principal | None) -> dict[str, list[Any]]:
    """The build's draft captures and figure values that ``viewer`` could read once live."""
    parts = build_parts(build)
    if viewer is None:
        return {"captures": [], "figures": []}
    capture_held, figure_held = drafts_held(viewer, build)
    captures = [item.source for item, best in zip(parts.captures, capture_held, strict=True) if best is not None]
    figures = [
        item.figure
        for item, best in zip(parts.figures, figure_held, strict=True)
        if best is not None and item.draft.page.current_revision_id is not None
    ]
    return {"captures": captures, "figures": figures, "pending_figures": _pending_figures(build, viewer)}


def _pending_figures(build: Build, viewer: Principal) -> list[dict[str, Any]]:
    """Values held for pages new in ``build``, shown to whoever may read the page's draft."""
    pending = [item.pending for item in build_parts(build).pending if item.pending]
    if not pending:
        return []
    readable = readable_changes(viewer, build)
    paths = {change.revision.path for change in build_parts(build).changes if change.pk in readable and change.revision}
    return [value for value in pending if value["page_path"] in paths]


def build_diff(*, build: Build, viewer: Principal | None) -> list[dict[str, object]]:
    """Per change ``viewer`` may read: path, action, where a move takes it (``new_path``), a
    unified diff (frontmatter, then body) against the page it replaces, and its sources.
    Changes to pages the viewer cannot read are left out entirely (no path, no count). After
    promotion the diff is the approved one.

    Call only with a build already obtained through ``build_get_visible``.
    """
    import difflib

    from builds.review import change_pairs

    pairs = change_pairs(build=build, viewer=viewer)
    # Hidden references are filtered for every revision at once (two queries, not two per side).
    references = ReferenceFilter(
        viewer, [revision.frontmatter for pair in pairs for revision in (pair.old, pair.new) if revision is not None]
    )
    result: list[dict[str, object]] = []
    for pair in pairs:
        new_revision = pair.new if pair.action != BuildChange.Action.DELETE else None
        old = _as_lines(references.seen(pair.old.frontmatter), pair.old.body) if pair.old is not None else []
        new = _as_lines(references.seen(new_revision.frontmatter), new_revision.body) if new_revision else []
        # A move's draft sits at its new path: the diff says where it goes, git's way, even when
        # the text is unchanged (an empty diff hid the move from REST and MCP reviewers).
        new_path = new_revision.path if pair.action == BuildChange.Action.MOVE and new_revision else ""
        diff = list(
            difflib.unified_diff(
                old, new, fromfile=f"live/{pair.path}", tofile=f"draft/{new_path or pair.path}", lineterm=""
            )
        )
        if new_path:
            diff = [f"rename from {pair.path}", f"rename to {new_path}", *diff]
        sources = list(references.seen(new_revision.frontmatter).get("sources", [])) if new_revision else []
        result.append(
            {"path": pair.path, "action": pair.action, "new_path": new_path, "is_new": pair.old is None,
             "diff": diff, "sources": sources}
        )  # fmt: skip
    return result


def _moved_to(change: BuildChange) -> str:
    moves = change.action == BuildChange.Action.MOVE and change.revision is not None
    return change.revision.path if moves and change.revision is not None else ""


def _hashes_as_seen(approved: list[dict[str, Any]], viewer: Principal | None) -> list[Any]:
    """Each approved change's sha256 as ``viewer`` may have it (``sha256_as_seen``): the draft
    of a writer who could not read some citation keeps it, and its whole-text hash would let
    them test guesses of it. One query for the revisions, at most two for the filter."""
    ids = [item["revision"] for item in approved if isinstance(item.get("revision"), int)]
    revisions = {revision.pk: revision for revision in Revision.objects.filter(pk__in=ids)}
    references = ReferenceFilter(viewer, [revision.frontmatter for revision in revisions.values()])
    hashes: list[Any] = []
    for item in approved:
        revision = revisions.get(item.get("revision"))  # type: ignore[arg-type]
        hashes.append(
            sha256_as_seen(revision, references.seen(revision.frontmatter)) if revision else item.get("sha256")
        )
    return hashes


def build_summary(*, build: Build, viewer: Principal | None) -> dict[str, object]:
    """The JSON shape of a build for the API (ids are public ids only), as ``viewer`` may see it."""
    drafts = visible_drafts(build=build, viewer=viewer)
    readable = readable_changes(viewer, build)
    approval: dict[str, object] | None = None
    promotion = Promotion.objects.filter(build=build).first() if build.status == Build.Status.PROMOTED else None
    if promotion is not None:
        readable_paths = {
            path
            for change in build_parts(build).changes
            if change.pk in readable
            for path in (change.path, change.new_path)
        }
        approved = [
            item for item in promotion.approved if isinstance(item, dict) and item.get("path") in readable_paths
        ]
        approval = {
            "approver": promotion.approver_label,
            "note": promotion.note,
            "at": promotion.created_at.isoformat(),
            # What went live, as the reader may see it (never a path they cannot read, nor a hash
            # of citations left out for them).
            "changes": [
                {"path": item.get("path"), "action": item.get("action"), "sha256": sha}
                for item, sha in zip(approved, _hashes_as_seen(approved, viewer), strict=True)
            ],
        }
    return {
        "id": str(build.public_id),
        "title": build.title,
        "purpose": build.purpose,
        "kind": build.kind,
        "status": build.status,
        "requester": build.requester.username if build.requester is not None else "system",
        # new_path: where a move takes the page ("" for writes and deletes).
        "changes": [
            {"path": change.path, "action": change.action, "new_path": _moved_to(change)}
            for change in build_parts(build).changes
            if change.pk in readable  # weighed once above: once per change made a read quadratic
        ],
        "captures": [f"capture:{source.key}" for source in drafts["captures"]],
        "figures": [figure.key for figure in drafts["figures"]] + [held["key"] for held in drafts["pending_figures"]],
        # A finished build has nothing left to block: its blockers would only be stale.
        "blockers": (
            build_promotion_blockers(build=build, approver=viewer)
            if viewer is not None and not build.is_terminal
            else []
        ),
        "promotion": approval,
    }
