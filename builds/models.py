"""Builds: branches of draft revisions that only a person can promote to the live corpus."""

from __future__ import annotations

import datetime as dt
import uuid

from django.db import models
from django.db.models import Q

from brain.leases import LeasedJob
from corpus.models import Figure, Revision
from grants.models import Member


class Build(models.Model):
    """A branch of proposed changes (drafts) with a requester and a purpose.

    ``public_id`` is the only identifier shown outside (URLs, credentials, MCP); the
    integer key never leaves the database. A build is open while drafts are written,
    awaits review once submitted, and ends promoted, rejected, cancelled or failed.
    """

    class Status(models.TextChoices):
        OPEN = "open"
        AWAITING_REVIEW = "awaiting_review"
        PROMOTED = "promoted"
        REJECTED = "rejected"
        CANCELLED = "cancelled"
        FAILED = "failed"

    class Kind(models.TextChoices):
        CHANGE = "change"
        IMPORT = "import"
        REEMBED = "reembed"

    TERMINAL = frozenset({Status.PROMOTED, Status.REJECTED, Status.CANCELLED, Status.FAILED})

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    title = models.CharField(max_length=200)
    purpose = models.TextField(blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CHANGE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    requester = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="requested_builds", null=True)
    participants = models.ManyToManyField(Member, related_name="builds", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["open", "awaiting_review", "promoted", "rejected", "cancelled", "failed"]),
                name="build_status_known",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True) | Q(status__in=["promoted", "rejected", "cancelled", "failed"]),
                name="build_finished_is_terminal",
            ),
        ]
        indexes = [models.Index(fields=["status", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.title} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL


class BuildChange(models.Model):
    """One proposed change to one path on a build's branch: a draft write, a delete or a move.

    Writing the same path again replaces the draft (the old draft revision stays, unlinked).
    """

    class Action(models.TextChoices):
        WRITE = "write"
        DELETE = "delete"
        MOVE = "move"

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="changes")
    path = models.CharField(max_length=255)
    action = models.CharField(max_length=8, choices=Action.choices)
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    new_path = models.CharField(max_length=255, blank=True)
    # When the text this draft was made from was read, for a draft derived from an earlier one
    # (a link, a section, a move of a draft); empty: its revision's own creation (``written_at``).
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["build", "path"], name="build_change_one_per_path"),
            models.CheckConstraint(
                condition=Q(action="delete") | Q(revision__isnull=False), name="build_change_write_has_revision"
            ),
        ]
        # A page's history follows it back through the moves that brought it to its path, and
        # stops where another page left that path before it.
        indexes = [
            models.Index(fields=["new_path"], condition=Q(action="move"), name="build_change_move_target"),
            models.Index(fields=["path"], condition=Q(action__in=["delete", "move"]), name="build_change_leaves_path"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.path}"

    @property
    def written_at(self) -> dt.datetime:
        """The moment a live change promoted since makes this draft stale: re-deriving a draft
        keeps it, so a live edit it would overwrite still blocks its promotion."""
        if self.read_at is not None:
            return self.read_at
        return self.revision.created_at if self.revision is not None else self.updated_at


class BuildCredential(models.Model):
    """A bearer credential bound to one build, shown once and stored only as its SHA-256.

    Minted and looked up like every shown-once token (``brain.bearer``); valid until
    ``expires_at`` and never after ``revoked_at`` (set the moment the build terminates).
    """

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="credentials")
    prefix = models.CharField(max_length=16)  # the first characters, to tell credentials apart
    token_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… for build {self.build_id}"


class Promotion(models.Model):
    """The record of a person approving a build: who, when, their note, and exactly what.

    ``approved`` lists every (path, action, revision sha256) pair that went live.
    """

    build = models.OneToOneField(Build, on_delete=models.PROTECT, related_name="promotion")
    approver = models.ForeignKey(Member, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    approver_label = models.CharField(max_length=150)
    note = models.TextField(blank=True)
    approved = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.build} approved by {self.approver_label}"


class Review(models.Model):
    """A reviewer's decision on a build (the approve decision is recorded with the promotion)."""

    class Decision(models.TextChoices):
        APPROVE = "approve"
        REJECT = "reject"

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=8, choices=Decision.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.reviewer} {self.decision} {self.build}"


class BuildJob(LeasedJob):
    """Durable background work for a build (an import, a re-embedding), run in steps.

    Postgres holds all its state. A step is claimed by taking the lease (a conditional
    UPDATE that must change exactly one row), does one bounded batch in one transaction,
    and releases the lease; a worker killed mid-step leaves an expired lease that the
    minute sweep re-enqueues, so the crash costs one sweep, never the build.
    """

    class Kind(models.TextChoices):
        IMPORT = "import"
        REEMBED = "reembed"

    class State(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    build = models.OneToOneField(Build, on_delete=models.CASCADE, related_name="job")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    steps_done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["state", "lease_expires_at"])]

    def __str__(self) -> str:
        return f"{self.kind} job for build {self.build_id} ({self.state})"


class BuildJobItem(models.Model):
    """One unit of a job's work (a file to draft, a chunk batch to re-embed); ``done`` once written."""

    job = models.ForeignKey(BuildJob, on_delete=models.CASCADE, related_name="items")
    ordinal = models.PositiveIntegerField()
    path = models.CharField(max_length=255, blank=True)
    content = models.TextField(blank=True)
    done = models.BooleanField(default=False)

    class Meta:
        ordering = ["job", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["job", "ordinal"], name="build_job_item_ordinal")]
        indexes = [models.Index(fields=["job", "done", "ordinal"])]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.ordinal} {self.path}"


class BuildCapture(models.Model):
    """A capture recorded on a build's branch (a draft ``Source`` until promotion)."""

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="captures")
    source = models.OneToOneField("corpus.Source", on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"{self.source} on {self.build_id}"


class BuildFigure(models.Model):
    """A figure value recorded on a build's branch (a draft ``Figure`` until promotion).

    On a page that is new in the same build there is no page row to hang a draft figure on:
    ``pending`` holds the value (page_path, key, value, unit, as_of, source_key) and the
    promotion records it right after the page goes live, setting ``figure``.
    """

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="figures")
    figure = models.OneToOneField("corpus.Figure", on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    pending = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(figure__isnull=False) | Q(pending__isnull=False), name="build_figure_recorded_or_pending"
            )
        ]

    def __str__(self) -> str:
        return f"{self.figure or self.pending} on {self.build_id}"

    @property
    def draft(self) -> Figure:
        """The draft figure; only for rows read with it (``build_parts`` reads only those)."""
        assert self.figure is not None, "a pending value has no draft figure yet"
        return self.figure
