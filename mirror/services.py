"""The mirror's one write path: configure, push, adopt a moved remote, report.

``mirror_run`` brings one mirror's remote branch to the corpus as its service account reads
it, in at most one commit:

1. Holding the mirror's run (a claim on its row, not a lock held through the run: one run at
   a time per mirror, nothing locked while git talks to the network), ask the remote where
   the branch is. Anywhere but
   where the brain left it, the mirror is ``moved``: reported, never overwritten, until an
   administrator adopts the remote (``mirror_adopt_remote``).
2. Plan the tree (``corpus.export.corpus_plan``) and render only the files whose row changed
   since the last push, that cite a page or capture that appeared or vanished, plus
   ``figures.yml`` and ``README.md``; compare blob ids with the manifest.
3. Nothing changed: no commit. Otherwise one commit (``git fast-import``) naming the
   promotions it carries — build, approver, note — and a fast-forward push. Manifest and
   ``pushed_sha`` are saved only after the push succeeded, in one short transaction, and
   only if nobody changed the mirror meanwhile (``updated_at``).

Because a push happened (remote side) before the transaction commits (our side), a crash
between the two leaves the remote one commit ahead; the next run recognises its own commit
(present in the cache, first parent = ``pushed_sha``) and carries on instead of calling it moved.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import NamedTuple

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from brain.jobs import enqueue_on_commit
from brain.leases import Lease, lease_claim_unfinished, lease_finish, lease_holds
from brain.text.secrets import redact
from builds.history import builds_titles_visible_to
from builds.models import Promotion
from corpus.export import Entry, corpus_plan, corpus_render
from grants.audit import audit_record
from grants.principals import SYSTEM, Principal
from grants.services import require_administrator
from integrations.models import IntegrationSecret
from integrations.secrets import SecretUnavailable, secret_get, secret_set
from mirror.git import GitError, PushRejected, Remote, Repository, Write, blob_sha
from mirror.models import Mirror, MirrorFile

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What one run did: the state it left, the commit it pushed (if any) and how many files it
    wrote or removed."""

    state: str
    commit: str = ""
    files: int = 0
    detail: str = ""
    ran: bool = True  # False: another run held the mirror (it runs again after), or it is gone


# --------------------------------------------------------------------------- configuration


def mirror_save(*, actor: Principal, mirror: Mirror, credential: str = "") -> Mirror:
    """Create or change a mirror (administrators); ``credential`` (if given) replaces the stored
    token or deploy key. A changed remote or branch starts over: nothing is known about it. A
    changed service account keeps the branch (the brain's own commits are still its own) and
    forgets only what each file held, so the next commit rewrites the whole tree."""
    require_administrator(actor)
    mirror.full_clean()
    with transaction.atomic():
        if mirror.pk is not None:
            before = Mirror.objects.select_for_update().get(pk=mirror.pk)
            # The form's copy of the row may predate a run's claim or result: those are the
            # row's (an administrator edits the configuration, never what a run recorded).
            for name in ("attempts", "lease_token", "lease_expires_at", "run_again", *RUN_RESULT_FIELDS):
                if name != "updated_at":
                    setattr(mirror, name, getattr(before, name))
            if (before.remote_url, before.branch) != (mirror.remote_url, mirror.branch):
                _forget_remote(mirror)
            elif before.service_account_id != mirror.service_account_id:
                MirrorFile.objects.filter(mirror=mirror).delete()
        mirror.save()
        if credential:
            secret_set(actor=actor, name=mirror.secret_name, value=credential)
        audit_record(actor=actor, action="mirror.save", target_type="mirror", target=mirror.name,
                     metadata={"branch": mirror.branch, "service_account": mirror.service_account.name})  # fmt: skip
    return mirror


def _forget_remote(mirror: Mirror) -> None:
    MirrorFile.objects.filter(mirror=mirror).delete()
    mirror.state = Mirror.State.NEW
    mirror.pushed_sha = mirror.remote_sha_seen = mirror.last_error = ""
    mirror.pushed_at = None


def mirror_adopt_remote(*, actor: Principal, mirror: Mirror) -> Mirror:
    """After a ``moved`` report: build the next commit on the remote branch as it is now.

    Nothing is force-pushed: the edits someone made stay in the branch's history, and the
    next commit sets the tree back to the corpus on top of them.
    """
    require_administrator(actor)
    with transaction.atomic():
        locked = Mirror.objects.select_for_update().get(pk=mirror.pk)
        if locked.state != Mirror.State.MOVED:
            raise ValueError("only a mirror whose remote moved can adopt it")
        MirrorFile.objects.filter(mirror=locked).delete()
        adopted = locked.remote_sha_seen
        locked.pushed_sha = adopted
        locked.state = Mirror.State.OK if adopted else Mirror.State.NEW
        locked.last_error = ""
        locked.save()
        audit_record(actor=actor, action="mirror.adopt_remote", target_type="mirror", target=locked.name,
                     metadata={"commit": adopted})  # fmt: skip
    return locked


# --------------------------------------------------------------------------- pushing


def _run_hold() -> dt.timedelta:
    """How long a run's claim lasts: its git budget and a margin to record the result. A
    worker that dies leaves the claim to expire; the next run (the sweep's) takes it."""
    return dt.timedelta(seconds=settings.BRAIN_MIRROR_RUN_SECONDS + 60)


def _claim_run(mirror_id: int) -> Lease | None:
    """Take the mirror's run, or (it is someone else's, alive) ask its holder for another.

    A lease on the row (``brain.leases``, judged by the database's clock), taken in a short
    transaction, not a lock held through the run: an administrator saving the mirror never
    waits on a remote, and it holds behind a transaction-pooling PgBouncer (a session
    advisory lock would not). None: not ours.
    """
    with transaction.atomic():
        rows = Mirror.objects.filter(pk=mirror_id)
        # Locked first, so a holder giving the run back cannot slip between a refused claim
        # and the request to run again (it would never see the request).
        if not list(rows.select_for_update().values_list("pk", flat=True)):
            return None
        lease = lease_claim_unfinished(Mirror, mirror_id, unfinished=Q(), duration=_run_hold())
        if lease is None:
            rows.update(run_again=True)
            return None
        rows.update(run_again=False)
    return lease


def _release_run(lease: Lease) -> None:
    """Give the run back; when another was asked for meanwhile, queue it (its changes may be
    newer than what this run read)."""
    with transaction.atomic():
        if not lease_holds(lease, lock=True):
            return  # taken over after this run outlived its claim, or the mirror is gone
        again = Mirror.objects.filter(pk=lease.pk).values_list("run_again", flat=True).get()
        lease_finish(lease, run_again=False)
        if again:
            enqueue_on_commit("mirror.push", lease.pk)


# What a run writes on the row (never its configuration, nor the claim columns).
RUN_RESULT_FIELDS = ["state", "pushed_sha", "pushed_at", "remote_sha_seen", "last_error", "promotion_mark",
                     "checked_at", "updated_at"]  # fmt: skip


@dataclass
class _Pending:
    """What a run writes, applied in one short transaction once git is done."""

    writes: list[Callable[[], object]] = dataclass_field(default_factory=list)
    audits: list[Callable[[], object]] = dataclass_field(default_factory=list)


def mirror_run(*, mirror_id: int) -> Outcome:
    """Bring one mirror up to date (see the module docstring). Never raises for git, the remote
    or anything else that goes wrong in a run: the failure is recorded on the mirror
    (``failing``, with git's scrubbed message, or the kind of error and "see the worker's log").

    One run at a time: while another holds the mirror, this one asks it to run again when it
    is done and returns ``busy``. git runs with no row locked and within
    ``BRAIN_MIRROR_RUN_SECONDS`` (below the task's time limit); the result is written
    afterwards, only if nobody changed the mirror meanwhile (an administrator's save or
    adoption queues a run of its own)."""
    started = time.monotonic()
    lease = _claim_run(mirror_id)
    if lease is None:
        state = Mirror.objects.filter(pk=mirror_id).values_list("state", flat=True).first()
        if state is None:
            return Outcome("gone", detail="the mirror was deleted", ran=False)
        return Outcome(state, detail="busy: another run holds it and runs again after it", ran=False)
    try:
        return _run_claimed(mirror_id, deadline=started + settings.BRAIN_MIRROR_RUN_SECONDS)
    finally:
        try:
            _release_run(lease)
        except Exception:  # the database gone for a moment: the claim expires, the sweep runs it
            logger.exception("mirror %s: could not give its run back; it expires by itself", mirror_id)


def _run_claimed(mirror_id: int, *, deadline: float) -> Outcome:
    mirror = Mirror.objects.select_related("service_account").filter(pk=mirror_id).first()
    if mirror is None:
        return Outcome("gone", detail="the mirror was deleted")
    if not mirror.enabled:
        return Outcome(mirror.state, detail="disabled")
    if not mirror.service_account.is_active:
        # It reads nothing while inactive: a run would push a tree emptied of every page.
        detail = f"paused: its service account {mirror.service_account.name} is deactivated"
        Mirror.objects.filter(pk=mirror.pk).update(last_error=detail, checked_at=timezone.now())
        return Outcome(mirror.state, detail=detail)
    seen = mirror.updated_at
    pushed_before = mirror.pushed_sha
    pending = _Pending()
    try:
        outcome = _run(mirror, pending, deadline)
    except PushRejected as exc:
        outcome = _moved(mirror, pending, remote_sha=mirror.remote_sha_seen, detail=str(exc))
    except (GitError, SecretUnavailable) as exc:
        logger.warning("mirror %s failed: %s", mirror.name, exc)
        outcome = _failing(mirror, pending, str(exc), pushed_before)
    except Exception as exc:  # a bug, a full disk, the task's time limit: recorded, never silent
        logger.exception("mirror %s failed unexpectedly", mirror.name)
        outcome = _failing(mirror, pending, f"the run failed unexpectedly ({type(exc).__name__}); "
                                            "the worker's log has the details", pushed_before)  # fmt: skip
    return _record(mirror, seen, pending, outcome)


def _failing(mirror: Mirror, pending: _Pending, detail: str, pushed_before: str) -> Outcome:
    pending.writes.clear()  # nothing of a failed run is kept but the failure
    # Nor what it learnt on the way: a lost push it recognised is recognised again next time,
    # with the manifest it forgets then (kept alone, the old manifest would pass for the new).
    mirror.pushed_sha = pushed_before
    mirror.state = Mirror.State.FAILING
    mirror.last_error = detail[:500]
    return Outcome(mirror.state, detail=mirror.last_error)


def _record(mirror: Mirror, seen: dt.datetime, pending: _Pending, outcome: Outcome) -> Outcome:
    """Write a run's result, unless the mirror changed (or went) while git ran."""
    with transaction.atomic():
        for audit in pending.audits:
            audit()  # what happened on the remote happened, whatever the row says now
        current = Mirror.objects.select_for_update().filter(pk=mirror.pk).first()
        if current is None or current.updated_at != seen:
            # Saved or adopted meanwhile: this run's view of it is stale, and that change
            # queued a run of its own. A commit pushed here is recognised by that run.
            logger.info("mirror %s changed while it ran; its result is left to the next run", mirror.pk)
            return Outcome(current.state if current else "gone", detail="changed while running; run again")
        for write in pending.writes:
            write()
        mirror.checked_at = timezone.now()
        mirror.save(update_fields=RUN_RESULT_FIELDS)
    return outcome


def _remote(mirror: Mirror) -> Remote:
    credential = ""
    # None stored: a public remote, or one reached by the host's own SSH setup (git will say).
    # One stored that cannot be read is said as such (SecretUnavailable), not sent to the
    # remote as no credential and reported back as "authentication failed".
    remote_needs_one = mirror.remote_url and not mirror.remote_url.startswith("file:")
    if remote_needs_one and IntegrationSecret.objects.filter(name=mirror.secret_name).exists():
        credential = secret_get(mirror.secret_name)
    return Remote(mirror.remote_url, mirror.branch, credential, mirror.known_hosts)


def cache_for(mirror: Mirror, deadline: float | None = None) -> Repository:
    return Repository(Path(settings.BRAIN_MIRROR_CACHE) / f"mirror-{mirror.pk}.git", deadline=deadline)


def _run(mirror: Mirror, pending: _Pending, deadline: float) -> Outcome:
    remote = _remote(mirror)
    cache = cache_for(mirror, deadline)
    cache.ensure()
    head = cache.remote_head(remote) or ""
    mirror.remote_sha_seen = head
    forget_manifest = False
    if head != mirror.pushed_sha:
        if head and cache.has_commit(head) and (cache.first_parent(head) or "") == mirror.pushed_sha:
            # Our own last push, whose record was lost with its transaction: carry on from it,
            # re-reading the whole tree (the manifest is of the commit before).
            mirror.pushed_sha = head
            forget_manifest = True
        else:
            said = "the remote branch is gone" if not head else "the remote branch has commits the mirror did not write"
            return _moved(mirror, pending, remote_sha=head, detail=said)
    if mirror.pushed_sha and not cache.has_commit(mirror.pushed_sha):
        cache.fetch(remote)
    return _commit_and_push(mirror, remote, cache, pending, forget_manifest=forget_manifest)


def _moved(mirror: Mirror, pending: _Pending, *, remote_sha: str, detail: str) -> Outcome:
    if mirror.state != Mirror.State.MOVED:
        metadata = {"remote": remote_sha, "pushed": mirror.pushed_sha}
        pending.audits.append(lambda: audit_record(actor=SYSTEM, action="mirror.moved", target_type="mirror",
                                                   target=mirror.name, metadata=metadata))  # fmt: skip
    mirror.state = Mirror.State.MOVED
    mirror.remote_sha_seen = remote_sha
    mirror.last_error = detail
    return Outcome(mirror.state, detail=detail)


@dataclass
class _Changes:
    writes: list[Write]
    removes: list[str]
    rows: list[MirrorFile]
    replace_all: bool


class _Known(NamedTuple):
    """A manifest row, read as a tuple: at 10k files, model instances cost more than the push."""

    kind: str
    subject: str
    stamp: str
    blob: str


def _changes(mirror: Mirror, plan: list[Entry], *, forget_manifest: bool = False) -> _Changes:
    rows = MirrorFile.objects.filter(mirror=mirror)
    known_rows = [] if forget_manifest else rows.values_list("name", "kind", "subject", "stamp", "blob")
    manifest = {name: _Known(*known) for name, *known in known_rows}
    replace_all = not manifest  # nothing known about the tree: write all of it
    if replace_all:
        wanted = plan
    else:
        before = {f"{known.kind}:{known.subject}" for known in manifest.values() if known.kind in ("page", "capture")}
        now = {f"{entry.kind}:{entry.subject}" for entry in plan if entry.kind in ("page", "capture")}
        appeared_or_gone = before ^ now
        # Files citing a page or capture that appeared or vanished show a different citation list.
        citing = (
            set(rows.filter(references__overlap=sorted(appeared_or_gone)).values_list("name", flat=True))
            if appeared_or_gone
            else set()
        )
        wanted = [entry for entry in plan if entry.name in citing or _stale(entry, manifest.get(entry.name))]
    planned = {entry.name for entry in plan}
    writes: list[Write] = []
    rendered_rows: list[MirrorFile] = []
    for rendered in corpus_render(mirror.service_account, plan, wanted):
        blob = blob_sha(rendered.file.data)
        known = manifest.get(rendered.file.path)
        if replace_all or known is None or known.blob != blob:
            writes.append(Write(rendered.file.path, rendered.file.data))
        entry = rendered.entry
        rendered_rows.append(
            MirrorFile(mirror=mirror, name=entry.name, kind=entry.kind, subject=entry.subject, stamp=rendered.stamp,
                       blob=blob, references=list(rendered.references))
        )  # fmt: skip
    removes = sorted(set(manifest) - planned)
    return _Changes(writes, removes, rendered_rows, replace_all)


def _stale(entry: Entry, known: _Known | None) -> bool:
    if entry.kind in ("figures", "readme") or known is None:
        return True
    return (known.kind, known.subject, known.stamp) != (entry.kind, entry.subject, entry.stamp)


def _commit_and_push(
    mirror: Mirror, remote: Remote, cache: Repository, pending: _Pending, *, forget_manifest: bool = False
) -> Outcome:
    plan = corpus_plan(mirror.service_account)
    changes = _changes(mirror, plan, forget_manifest=forget_manifest)
    # A first push (or one that rewrites the whole tree) carries the corpus, not a promotion.
    promotions = [] if changes.replace_all else _promotions_since(mirror, plan, changes.removes)
    newest = Promotion.objects.aggregate(newest=Max("pk"))["newest"] or 0
    parent = mirror.pushed_sha or None
    commit = ""
    if changes.writes or changes.removes:
        message, author = _message(promotions, len(changes.writes) + len(changes.removes), first=changes.replace_all)
        commit = cache.commit(
            parent=parent, writes=changes.writes, removes=changes.removes, replace_all=changes.replace_all,
            message=message, author=author, when=int(timezone.now().timestamp()),
        )  # fmt: skip
        # With the manifest, a changed blob means a changed tree; without it (a first push on an
        # adopted branch, a lost record), the tree may be the one the branch already has.
        if changes.replace_all and parent is not None and cache.tree(commit) == cache.tree(parent):
            commit = ""  # the same tree as the branch already has: no empty commit
        else:
            cache.push(remote, commit)
    pending.writes.append(lambda: _save_manifest(mirror, changes))
    if commit:
        mirror.pushed_sha = mirror.remote_sha_seen = commit
        mirror.pushed_at = timezone.now()
        metadata = {"commit": commit, "files": len(changes.writes) + len(changes.removes),
                    "builds": [str(p.build.public_id) for p in promotions]}  # fmt: skip
        pending.audits.append(lambda: audit_record(actor=SYSTEM, action="mirror.push", target_type="mirror",
                                                   target=mirror.name, metadata=metadata))  # fmt: skip
    mirror.promotion_mark = max(mirror.promotion_mark, newest)
    mirror.state = Mirror.State.OK
    mirror.last_error = ""
    return Outcome(mirror.state, commit, len(changes.writes) + len(changes.removes) if commit else 0)


def _save_manifest(mirror: Mirror, changes: _Changes) -> None:
    if changes.replace_all:
        MirrorFile.objects.filter(mirror=mirror).delete()
    elif changes.removes:
        MirrorFile.objects.filter(mirror=mirror, name__in=changes.removes).delete()
    MirrorFile.objects.bulk_create(
        changes.rows,
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["mirror", "name"],
        update_fields=["kind", "subject", "stamp", "blob", "references"],
    )


def _promotions_since(mirror: Mirror, plan: list[Entry], removes: list[str]) -> list[Promotion]:
    """Promotions not yet named in a commit that touched a page this mirror shows (or showed):
    a build that only changed pages the service account cannot read is not named at all."""
    shown = {entry.subject for entry in plan if entry.kind == "page"} | set(removes)
    named = []
    for promotion in Promotion.objects.filter(pk__gt=mirror.promotion_mark).select_related("build").order_by("pk"):
        touched = {str(item.get("path", "")) for item in promotion.approved} | {
            str(item.get("from", "")) for item in promotion.approved
        }
        if touched & shown:
            named.append(promotion)
    # Its title and note are named only if the service account may read all the build changed
    # (page history's rule): a build that also touched hidden pages or captures stays unnamed.
    readable = builds_titles_visible_to(mirror.service_account, {promotion.build_id for promotion in named})
    return [promotion for promotion in named if promotion.build_id in readable]


def _message(promotions: list[Promotion], files: int, *, first: bool) -> tuple[str, str]:
    """(commit message, author) naming each promotion's build, approver and note."""
    noun = "file" if files == 1 else "files"
    if first:
        return f"Mirror the corpus: {files} {noun}\n", "Brain"
    if not promotions:
        return f"Sync the corpus: {files} {noun} changed outside a promotion\n", "Brain"
    if len(promotions) == 1:
        promotion = promotions[0]
        head = f"{_line(promotion.build.title)} (approved by {_line(promotion.approver_label)})"
    else:
        head = f"Promote {len(promotions)} builds"
    lines = [head, ""]
    for promotion in promotions:
        lines.append(f"Build {promotion.build.public_id}: {_line(promotion.build.title)}")
        lines.append(f"Approved by {_line(promotion.approver_label)} on {_when(promotion.created_at)}")
        if promotion.note.strip():
            lines.append("Note: " + redact(promotion.note.strip()))
        lines.append("")
    lines.append(f"{files} {noun} changed.")
    for promotion in promotions:
        lines.append(f"Brain-Build: {promotion.build.public_id}")
    author = promotions[0].approver_label if len({p.approver_label for p in promotions}) == 1 else "Brain"
    return "\n".join(lines) + "\n", author


def _line(text: str) -> str:
    return redact(" ".join(text.split()))[:200]


def _when(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# --------------------------------------------------------------------------- reporting


def mirrors_health() -> dict[str, str] | None:
    """For ``/healthz``: each enabled mirror's state by name, or None when there is none."""
    states = dict(Mirror.objects.filter(enabled=True).values_list("name", "state"))
    return states or None
