"""What a build's review screen shows: each change as a pair of revisions, diffed.

Before promotion a change is compared with the live page; after promotion with the
revision it replaced, recorded on the ``Promotion`` — so a promoted build keeps showing
exactly the diff its approver approved, like a merged pull request, however the page has
changed since. Every read goes through the viewer's grants: a change to a page the viewer
cannot read is left out entirely (no path, no count).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from django.utils.safestring import SafeString

from builds.models import Build, BuildChange
from builds.selectors import build_parts, held_on, pages_at, readable_changes
from corpus.diffs import Diff, line_diff
from corpus.models import Page, Revision
from corpus.rendering import page_links, render_markdown
from corpus.selectors import ReferenceFilter
from grants.models import Member, Permission
from grants.predicates import members_holding_all
from grants.principals import Principal, SystemPrincipal

# Past this many approvers the page names the first ones and says how many others.
APPROVER_CHECK_LIMIT = 12


@dataclass(frozen=True)
class ChangePair:
    """One change as the viewer may see it: the revision it replaces (or None) and the new one."""

    path: str
    action: str
    old: Revision | None
    new: Revision | None


@dataclass
class ChangeView:
    """A change ready to show: its diff, the draft's frontmatter as written, a rendered preview."""

    path: str
    action: str
    is_new: bool
    new_path: str
    diff: Diff
    frontmatter_text: str
    preview_html: SafeString | None
    sources: list[str]

    @property
    def label(self) -> str:
        return change_label(self.action, self.is_new)


def change_label(action: str, is_new: bool) -> str:
    if action == BuildChange.Action.DELETE:
        return "deleted"
    if action == BuildChange.Action.MOVE:
        return "moved"
    return "new page" if is_new else "changed"


@dataclass
class ReviewView:
    """The changes of one window (``start``: the first one's index), and the label of every
    change the viewer may read, for the counts."""

    changes: list[ChangeView] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    start: int = 0

    @property
    def total(self) -> int:
        return len(self.labels)

    @property
    def end(self) -> int:
        return self.start + len(self.changes)

    def count(self, label: str) -> int:
        return self.labels.count(label)

    @property
    def new(self) -> int:
        return self.count("new page")

    @property
    def changed(self) -> int:
        return self.count("changed")

    @property
    def deleted(self) -> int:
        return self.count("deleted")

    @property
    def moved(self) -> int:
        return self.count("moved")


def revision_readable(viewer: Principal | None, revision: Revision) -> bool:
    """Whether ``viewer`` may read ``revision`` as it was written (its path, category, sensitivity)."""
    from corpus.services import document_from_revision, may_write

    if isinstance(viewer, SystemPrincipal):
        return True
    return viewer is not None and may_write(viewer, document_from_revision(revision), None, Permission.READ)


def change_pairs(*, build: Build, viewer: Principal | None) -> list[ChangePair]:
    """The build's changes the viewer may read, each as (replaced revision, new revision)."""
    promotion = getattr(build, "promotion", None) if build.status == Build.Status.PROMOTED else None
    if promotion is not None:
        return _approved_pairs(promotion.approved, viewer, build)
    pairs: list[ChangePair] = []
    changes = build_parts(build).changes
    readable = readable_changes(viewer, build)
    # The live page at each path, if the viewer may read it (weighed through the predicate).
    live_rows = [page for page in pages_at(build).values() if page.current_revision_id is not None]
    held = held_on(viewer, build, [(page.path, page.category, int(page.sensitivity)) for page in live_rows])
    live_pages = {page.path: page for page, best in zip(live_rows, held, strict=True) if best is not None}
    for change in changes:
        if change.pk not in readable:
            continue
        live = live_pages.get(change.path)
        pairs.append(ChangePair(change.path, change.action, live.current_revision if live else None, change.revision))
    return pairs


def _approved_pairs(approved: list[dict[str, Any]], viewer: Principal | None, build: Build) -> list[ChangePair]:
    """The approved (replaced, new) revision pairs the viewer may read today.

    A revision is shown when the viewer may read it as it was written *and* may read its page
    as it is now (as the page history requires): a page restricted since is not shown through
    an old build. A retired page has no present scope; its revisions' own scope decides.
    """
    ids = [entry.get(key) for entry in approved for key in ("revision", "previous")]
    revisions = Revision.objects.select_related("page").in_bulk([pk for pk in ids if pk])
    live_pages = {
        revision.page.pk: revision.page
        for revision in revisions.values()
        if revision.page is not None and revision.page.current_revision_id is not None
    }
    held = held_on(viewer, build, [(page.path, page.category, int(page.sensitivity)) for page in live_pages.values()])
    readable_pages = {page.pk for page, best in zip(live_pages.values(), held, strict=True) if best is not None}

    def shown(revision: Revision | None) -> Revision | None:
        if revision is None or not revision_readable(viewer, revision):
            return None
        if revision.page_id in live_pages and revision.page_id not in readable_pages:
            return None
        return revision

    pairs: list[ChangePair] = []
    for entry in approved:
        new = revisions.get(entry.get("revision") or 0)
        old = revisions.get(entry.get("previous") or 0)
        if new is None and old is None:  # promoted before pairs were recorded: the paths only
            continue
        shown_new, shown_old = shown(new), shown(old)
        if shown_new is None and (new is not None or shown_old is None):
            continue  # the viewer may not read what went live (or what was deleted)
        if entry["action"] == "move" and shown_old is None:
            # Moved out of a page the viewer cannot read: to them it arrived as a new page, and
            # where it came from is not theirs to see.
            pairs.append(ChangePair(entry["path"], "write", None, shown_new))
            continue
        pairs.append(ChangePair(entry.get("from") or entry["path"], entry["action"], shown_old, shown_new))
    return pairs


def _frontmatter_lines(revision: Revision, references: ReferenceFilter) -> tuple[list[str], str]:
    """The frontmatter as its author wrote it — unless that names something hidden from the viewer.

    Then (and for revisions written before the text was kept) it is the parsed frontmatter
    with the hidden references left out, serialised: never a key or path the viewer could not read.
    """
    shown = references.seen(revision.frontmatter)
    if revision.frontmatter_text and shown == revision.frontmatter:
        text = revision.frontmatter_text
    else:
        text = yaml.safe_dump(shown, sort_keys=False, allow_unicode=True).rstrip("\n")
    return text.splitlines(), text


def revision_lines(
    revision: Revision | None, viewer: Principal | None, references: ReferenceFilter | None = None
) -> list[str]:
    """A revision as the lines a diff compares: frontmatter (as written when allowed), then body."""
    if revision is None:
        return []
    references = references or ReferenceFilter(viewer, [revision.frontmatter])
    frontmatter, _ = _frontmatter_lines(revision, references)
    return ["---", *frontmatter, "---", *revision.body.splitlines()]


def build_review(*, build: Build, viewer: Principal | None, window: slice | None = None) -> ReviewView:
    """The changes of ``build`` the viewer may read, diffed word by word, with a preview: all of
    them, or those in ``window`` (a 2,000-file import drew every diff and preview in one page
    of 5 MB); every change's label is counted either way.

    Call only with a build obtained through ``build_get_visible``.
    """
    every = change_pairs(build=build, viewer=viewer)
    window = window or slice(None)
    pairs = every[window]
    review = ReviewView(
        labels=[change_label(pair.action, pair.old is None) for pair in every],
        start=window.indices(len(every))[0],
    )
    references = ReferenceFilter(
        viewer, [revision.frontmatter for pair in pairs for revision in (pair.old, pair.new) if revision is not None]
    )
    # A preview's links lead where the live pages are: to one the reviewer cannot read, or one
    # not live yet (this build's own new pages too), a link would be a 404 — marked instead.
    drafts = [pair.new for pair in pairs if pair.new is not None and pair.action != BuildChange.Action.DELETE]
    targets = {target for draft in drafts for target in page_links(draft.body, page_path=draft.path)}
    readable = set(Page.objects.visible_to(viewer, "read").filter(path__in=targets).values_list("path", flat=True))
    unavailable = frozenset(targets - readable)
    for pair in pairs:
        new = pair.new if pair.action != BuildChange.Action.DELETE else None
        frontmatter_text = _frontmatter_lines(new, references)[1] if new is not None else ""
        shown_sources = references.seen(new.frontmatter).get("sources", []) if new else []
        review.changes.append(
            ChangeView(
                path=pair.path,
                action=pair.action,
                is_new=pair.old is None,
                new_path=new.path if new is not None and new.path != pair.path else "",
                diff=line_diff(revision_lines(pair.old, viewer, references), revision_lines(new, viewer, references)),
                frontmatter_text=frontmatter_text,
                preview_html=SafeString(
                    render_markdown(
                        new.body,
                        page_path=new.path,
                        title=str(new.frontmatter.get("title", "")),
                        heading_ids=False,
                        unavailable=unavailable,
                    )
                )
                if new is not None
                else None,
                sources=[str(source) for source in shown_sources],
            )
        )
    return review


@dataclass(frozen=True)
class Approvers:
    """Who could approve a build, as far as its requester may be told."""

    names: list[str]
    more: int  # how many further members could, beyond the names listed


def _added_citations(
    build: Build, requester: Member, readable_live: dict[str, Page]
) -> list[tuple[str, str | None, int]]:
    """The live pages and captures the build's drafts cite anew (not this build's own, not
    what the page there already cited), as the requester can read them: (path, category,
    sensitivity) each approver must read. One cited thing the requester cannot read is left
    out — nothing here may say it exists; the gate still stops it for everyone."""
    from corpus.models import Source
    from corpus.selectors import frontmatter_references

    parts = build_parts(build)
    own_pages = {change.path for change in parts.changes}
    own_captures = {recorded.source.key for recorded in parts.captures}
    pages: set[str] = set()
    keys: set[str] = set()
    for change in parts.changes:
        if change.revision is None:
            continue
        related, sources = frontmatter_references(change.revision.frontmatter)
        before: set[str] = set()
        live = readable_live.get(change.path)
        if live is not None and live.current_revision is not None:
            for references in frontmatter_references(live.current_revision.frontmatter):
                before.update(references)
        pages.update(path for path in related if path not in own_pages and path not in before)
        keys.update(
            item.removeprefix("capture:") for item in sources
            if item not in before and item.removeprefix("capture:") not in own_captures
        )  # fmt: skip
    found: list[tuple[str, str | None, int]] = [
        (page.path, page.category, int(page.sensitivity))
        for page in Page.objects.visible_to(requester, "read").filter(path__in=pages)
    ]
    found += [
        (source.scope_path, source.category, int(source.sensitivity))
        for source in Source.objects.visible_to(requester, "read").filter(key__in=keys)
    ]
    return found


def build_approvers(*, build: Build, requester: Member) -> Approvers:
    """Active members (not the requester, unless self-approval is allowed) whose grants let them
    approve every part of ``build``, worked out as the requester sees the corpus.

    A live page the requester cannot read counts as no page (exactly as when they drafted over
    it), so the answer is the same as for a free path and tells them nothing about it; the
    promotion gate still stops such a draft for everyone. For each page change: approve on the
    draft as it will be, on the live page there when the requester can read it, and the owner
    rule of either; each capture: approve on its scope; each figure: approve on its page and
    its owner rule. One query for every part at once (``members_holding_all``: a query per part
    made a 2,000-file build's page run 2,000 of them). Stale drafts are reported to the
    requester by their own blockers list, not here.
    """
    from builds.services import builds_settings
    from corpus.services import document_from_revision

    objects: list[tuple[str, str | None, int]] = []  # each must be approved by the one approver
    owners: set[str] = set()  # usernames the owner rule requires (each must be the approver)

    def narrow(path: str, category: str | None, sensitivity: int) -> None:
        objects.append((path, category, int(sensitivity)))

    parts = build_parts(build)
    pages = pages_at(build)
    live_rows = [page for page in pages.values() if page.current_revision_id is not None]
    held = held_on(requester, build, [(page.path, page.category, int(page.sensitivity)) for page in live_rows])
    readable_live = {page.path: page for page, best in zip(live_rows, held, strict=True) if best is not None}
    for change in parts.changes:
        live = readable_live.get(change.path)
        if live is not None:
            narrow(live.path, live.category, live.sensitivity)
            if live.change_policy == "owner" and live.owner.binds_as_owner:
                owners.add(live.owner.username)
        if change.revision is not None:
            document = document_from_revision(change.revision)
            narrow(document.path, document.category, document.sensitivity)
            existing = readable_live.get(document.path)
            owner_rule = document.change_policy == "owner" or (
                existing is not None and existing.change_policy == "owner"
            )
            if owner_rule and (existing is None or existing.owner.binds_as_owner):
                owners.add(existing.owner.username if existing is not None else document.owner)
    for recorded in parts.captures:
        source = recorded.source
        narrow(source.scope_path, source.category, source.sensitivity)
    for figure_draft in parts.figures:
        page = figure_draft.draft.page
        narrow(page.path, page.category, page.sensitivity)
        if page.change_policy == "owner" and page.owner.binds_as_owner:
            owners.add(page.owner.username)
    if not objects or len(owners) > 1:  # two different owners can never both be the approver
        return Approvers([], 0)
    candidates = members_holding_all(Permission.APPROVE, objects)
    cited = _added_citations(build, requester, readable_live)
    if candidates and cited:
        # The promotion gate refuses an approver who cannot read a citation the build adds
        # ("it adds citations … you cannot read"): naming them sent the requester to someone
        # who then could not approve.
        candidates &= members_holding_all(Permission.READ, cited)
    if not candidates:
        return Approvers([], 0)
    members = Member.objects.filter(pk__in=candidates, is_active=True, user__is_active=True).select_related("user")
    if not builds_settings()["ALLOW_SELF_APPROVAL"]:
        members = members.exclude(pk=requester.pk)
    if owners:
        members = members.filter(user__username__in=owners)
    names = sorted(member.username for member in members)
    return Approvers(names[:APPROVER_CHECK_LIMIT], max(0, len(names) - APPROVER_CHECK_LIMIT))
