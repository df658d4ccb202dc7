"""The memory layer: each member's private memories and the one shared team layer.

A memory lives in exactly one layer (``workspace``): ``personal`` (only its author can
read it — administrators included cannot) or ``company`` (the shared team layer: every
active member reads it; only the author or an administrator changes it). Sharing moves
the memory between layers; there is never a copy.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from pgvector.django import HnswIndex, VectorField

from brain.leases import LeasedJob
from corpus.models import EMBEDDING_DIMENSIONS
from grants.models import Member
from memory.querysets import MemoryQuerySet

MAX_TAGS = 64
MAX_TAG_LENGTH = 128


class Workspace(models.TextChoices):
    PERSONAL = "personal"
    COMPANY = "company"  # the wire value of the Shared team layer


class Status(models.TextChoices):
    CANONICAL = "canonical"
    DRAFT = "draft"
    DEPRECATED = "deprecated"


class Kind(models.TextChoices):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


class Volatility(models.TextChoices):
    DURABLE = "durable"
    STATE = "state"
    VOLATILE = "volatile"


class LinkType(models.TextChoices):
    RELATES_TO = "relates_to"
    SUPERSEDES = "supersedes"
    CAUSED_BY = "caused_by"
    DECIDED = "decided"
    ABOUT_PERSON = "about_person"
    PART_OF_PROJECT = "part_of_project"
    FOLLOWS = "follows"
    DRAWN_FROM = "drawn_from"


class Provenance(models.TextChoices):
    EXPLICIT = "explicit"
    INFERRED = "inferred"
    SYSTEM = "system"


class Memory(models.Model):
    """One memory. Status travels on the wire as a ``status:<value>`` tag, as in the seed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    author = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="memories")
    workspace = models.CharField(max_length=16, choices=Workspace.choices, default=Workspace.PERSONAL)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=MAX_TAG_LENGTH), default=list, blank=True, size=MAX_TAGS)
    source = models.CharField(max_length=200, blank=True, default="")
    # The key of the thing an import or capture path made this memory from ("obsidian:<vault>/<path>",
    # "ics:<uid>", "email:<message-id>", …): unique per author, so a re-import updates instead of
    # adding. Empty for memories written directly.
    origin = models.CharField(max_length=300, blank=True, default="")
    # When what an episodic memory records happened (a calendar event's start, a mail's date);
    # null means "when it was captured". Time filters in recall read this first.
    occurred_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    importance = models.PositiveSmallIntegerField(default=3)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.SEMANTIC)
    volatility = models.CharField(max_length=16, choices=Volatility.choices, default=Volatility.DURABLE)
    recall_count = models.PositiveIntegerField(default=0)
    # When recall last returned it (the weekly insight's "most recalled" reads the week's).
    last_recalled_at = models.DateTimeField(null=True, blank=True)
    contradiction_wins = models.PositiveIntegerField(default=0)
    contradiction_losses = models.PositiveIntegerField(default=0)
    # Null while the embedder is down; ``memory.backfill_embeddings`` fills it later.
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True, default="")
    # NFKC text and no-space-script bigrams for keyword recall (see corpus.lexical).
    lexical = models.TextField(default="")
    cjk_terms = models.TextField(default="", blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("lexical", weight="A", config="english")
        + SearchVector("cjk_terms", weight="B", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Set by a database trigger from the tags (never by Python): the row is a prompt-capsule
    # definition. A partial index over these rows bounds a capsule build.
    is_capsule = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MemoryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(workspace__in=["personal", "company"]), name="memory_workspace"),
            models.CheckConstraint(condition=Q(status__in=["canonical", "draft", "deprecated"]), name="memory_status"),
            models.CheckConstraint(condition=Q(importance__gte=1, importance__lte=5), name="memory_importance"),
            models.CheckConstraint(condition=Q(kind__in=["episodic", "semantic"]), name="memory_kind"),
            models.CheckConstraint(
                condition=Q(volatility__in=["durable", "state", "volatile"]), name="memory_volatility"
            ),
            models.UniqueConstraint(
                fields=["author", "origin"], condition=~Q(origin=""), name="memory_origin_unique_per_author"
            ),
        ]
        indexes = [
            models.Index(fields=["workspace", "author", "-created_at"], name="memory_layer_recent"),
            models.Index(fields=["workspace", "-updated_at"], name="memory_layer_changed"),
            models.Index(
                fields=["workspace", "-last_recalled_at"],
                name="memory_layer_recalled",
                condition=Q(last_recalled_at__isnull=False),
            ),
            GinIndex(name="memory_tags_gin", fields=["tags"]),
            GinIndex(name="memory_search_vector_gin", fields=["search_vector"]),
            HnswIndex(
                name="memory_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.workspace})"

    @property
    def wire_tags(self) -> list[str]:
        """Tags as clients see them: the stored tags plus ``status:<status>``."""
        return [*self.tags, f"status:{self.status}"]


class MemoryLink(models.Model):
    """A typed relationship between two memories of the same layer (never to itself)."""

    from_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_out")
    to_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_in")
    type = models.CharField(max_length=32, choices=LinkType.choices)
    provenance = models.CharField(max_length=16, choices=Provenance.choices, default=Provenance.EXPLICIT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["type", "created_at"], name="memory_link_type_created")]
        constraints = [
            models.UniqueConstraint(fields=["from_memory", "to_memory", "type"], name="memory_link_unique"),
            models.CheckConstraint(condition=~Q(from_memory=F("to_memory")), name="memory_link_not_self"),
            models.CheckConstraint(condition=Q(type__in=LinkType.values), name="memory_link_type"),
            models.CheckConstraint(condition=Q(provenance__in=Provenance.values), name="memory_link_provenance"),
        ]

    def __str__(self) -> str:
        return f"{self.from_memory_id} -{self.type}-> {self.to_memory_id}"


class MemoryEvent(models.Model):
    """Append-only history of one memory (kept after the memory is forgotten; never its content)."""

    class Action(models.TextChoices):
        CREATED = "created"
        UPDATED = "updated"
        APPENDED = "appended"
        DELETED = "deleted"
        STATUS_CHANGED = "status_changed"
        SHARED = "shared"
        UNSHARED = "unshared"

    memory_id = models.UUIDField(db_index=True)
    actor = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=32, choices=Action.choices)
    workspace = models.CharField(max_length=16, choices=Workspace.choices)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["workspace", "action", "created_at"], name="memory_event_layer_action")]

    def __str__(self) -> str:
        return f"{self.action} {self.memory_id}"


class InsightDelivery(models.TextChoices):
    DASHBOARD = "dashboard"  # shown on the memory dashboard only
    EMAIL = "email"  # also mailed (Django's mail backend) to the member's address
    SLACK = "slack"  # also sent as a Slack DM (needs a linked Slack user and the bot token)


class MemoryPreference(models.Model):
    """A member's own memory settings: capture defaults, weekly insights, the inbound mail address.

    An empty ``default_workspace`` means "the team's default" (``TeamMemorySettings``).
    """

    member = models.OneToOneField(Member, on_delete=models.CASCADE, related_name="memory_preference")
    default_workspace = models.CharField(max_length=16, choices=Workspace.choices, blank=True, default="")
    # Added to every memory this member captures (through any path), after the caller's own tags.
    default_tags = ArrayField(models.CharField(max_length=MAX_TAG_LENGTH), default=list, blank=True, size=16)
    weekly_insights = models.BooleanField(default=False)
    insights_delivery = models.CharField(
        max_length=16, choices=InsightDelivery.choices, default=InsightDelivery.DASHBOARD
    )
    # The secret part of the member's inbound address (memory+<token>@BRAIN_INBOUND_DOMAIN);
    # null until they turn mail capture on. Rotating it retires the old address.
    inbound_token = models.CharField(max_length=40, unique=True, null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.member}: {self.default_workspace or 'team default'}"


class TeamMemorySettings(models.Model):
    """The brain's memory defaults, one row (pk 1), changed by an administrator.

    ``default_workspace`` empty means ``BRAIN_MEMORY_DEFAULT_WORKSPACE`` (the deployment's
    setting) still decides.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    default_workspace = models.CharField(max_length=16, choices=Workspace.choices, blank=True, default="")
    default_tags = ArrayField(models.CharField(max_length=MAX_TAG_LENGTH), default=list, blank=True, size=16)
    # A weekly summary of the shared layer, shown to every member on the dashboard and added to
    # the digests of members who receive their own.
    shared_insights = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "team memory settings"
        verbose_name_plural = "team memory settings"
        constraints = [models.CheckConstraint(condition=Q(id=1), name="team_memory_settings_singleton")]

    def __str__(self) -> str:
        return "Team memory settings"


class MemoryInsight(LeasedJob):
    """One week's summary of one layer: a member's personal layer, or (member null) the shared layer.

    ``summary`` is the deterministic record (counts and memory ids); ``text`` the prose shown
    and delivered. Written by ``memory.insights`` once per layer and week. ``delivers`` is
    set with the row when its member wants it sent (mail or Slack): until ``delivered_at``,
    each run sends it again, under the row's lease, so a run killed between writing and
    sending still delivers it and two runs never both send it.
    """

    member = models.ForeignKey(Member, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    week_start = models.DateField()
    summary = models.JSONField(default=dict)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    delivers = models.BooleanField(default=False)
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivery_error = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-week_start"]
        constraints = [
            models.UniqueConstraint(fields=["member", "week_start"], name="memory_insight_once_a_week"),
            models.UniqueConstraint(
                fields=["week_start"], condition=Q(member__isnull=True), name="memory_shared_insight_once_a_week"
            ),
        ]

    def __str__(self) -> str:
        return f"insight {self.week_start} ({self.member_id or 'shared'})"


class CalendarSubscription(models.Model):
    """An ICS URL a member subscribed to; ``memory.calendars`` refreshes it on a beat.

    Events become episodic memories (origin ``ics:<uid>[:<recurrence>]``) in ``workspace``.
    """

    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="calendar_subscriptions")
    name = models.CharField(max_length=80)
    url = models.URLField(max_length=2000)
    workspace = models.CharField(max_length=16, choices=Workspace.choices, blank=True, default="")
    etag = models.CharField(max_length=200, blank=True, default="")
    last_modified = models.CharField(max_length=100, blank=True, default="")
    last_checked_at = models.DateTimeField(null=True, blank=True)
    # Set when its person subscribes or asks for "Refresh now": a worker fetches it next
    # (``memory.calendar_refresh``, else the sweep), never the web request.
    refresh_requested_at = models.DateTimeField(null=True, blank=True)
    # Set while a worker fetches it (the claim: one fetch at a time); both are cleared with the
    # outcome, so the page follows the row until the outcome is on it.
    fetch_started_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True, default="")
    events_seen = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["member", "url"], name="calendar_subscription_once")]

    def __str__(self) -> str:
        return f"{self.name} ({self.member})"


PERSONAL_TOKEN_SCOPES = ("memory", "corpus:read", "sources:write", "builds:write")


def default_personal_scopes() -> list[str]:
    """What a new personal token may do unless its person chooses otherwise (the CLI's needs)."""
    return ["memory", "corpus:read", "sources:write"]


def legacy_personal_scopes() -> list[str]:
    """What tokens issued before scopes existed could do: the memory API, capsules and uploads."""
    return ["memory", "sources:write"]


class MemoryApiToken(models.Model):
    """A member's personal API token (``bmt_``): shown once, stored as a SHA-256 hash, scoped.

    ``scopes`` limit it below the member's own grants: ``memory``, ``corpus:read``,
    ``sources:write``, ``builds:write`` (see ``brain.callers``).
    """

    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="memory_api_tokens")
    name = models.CharField(max_length=80)
    scopes = ArrayField(models.CharField(max_length=32), default=default_personal_scopes)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # the first characters, to tell tokens apart
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scopes__contained_by=list(PERSONAL_TOKEN_SCOPES)), name="personal_token_scopes_known"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class PromptCapsuleRevision(models.Model):
    """The current opaque revision of one layer's capsules, advanced by triggers (see memory.capsule_sql).

    ``layer`` is ``company`` or ``personal:<member id>``.
    """

    layer = models.CharField(max_length=40, primary_key=True)
    revision = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "prompt_capsule_revisions"

    def __str__(self) -> str:
        return f"{self.layer}@{self.revision[:8]}"


class MemoryVerdictJob(LeasedJob):
    """One model verdict to take on a captured memory and its closest neighbour (``memory.settle``).

    Created in the capture's transaction, so a verdict is never lost between the commit and
    the queue: the Celery message only says "run job N". A worker claims the job with a
    conditional UPDATE that sets a fresh ``lease_token``; the verdict is applied in the same
    transaction that checks the token is still its own and marks the job ``done``, so a
    worker that outlived its lease (another took the job over) applies nothing. A worker
    killed mid-run leaves an expired lease; ``memory.verdicts_sweep`` (beat, every minute)
    sends the job again. Only ids and the similarity are kept — never memory text — and the
    memory ids are plain values, not foreign keys: a verdict may delete the new memory
    (``merge``, ``replace``) and the job must outlive it.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    new_memory_id = models.UUIDField()
    old_memory_id = models.UUIDField()
    similarity = models.FloatField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    # What the run did: the verdict applied, "no-verdict" or "skipped" (see memory.verdicts).
    outcome = models.CharField(max_length=16, blank=True, default="")
    error = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # Every claim, release and finish moves it: "queued and untouched for a while" is the
    # sweep's test for a message that was never sent (or a retry whose message was lost).
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["queued", "running", "done", "failed"]), name="memory_verdict_job_state"
            ),
            # A capture queues at most one verdict for its pair.
            models.UniqueConstraint(fields=["new_memory_id", "old_memory_id"], name="memory_verdict_job_pair"),
        ]
        indexes = [models.Index(fields=["state", "lease_expires_at"], name="memory_verdict_job_lease")]

    def __str__(self) -> str:
        return f"verdict job {self.pk} ({self.state})"


class VaultImport(LeasedJob):
    """An Obsidian or Notion import too large to run inside a web request (``memory.vault_jobs``).

    The upload's notes wait here (Postgres is the only state) until a worker takes the row's
    lease and runs the import — all or nothing, as in a request — writing how far it got
    (``notes_done`` of ``notes_total``) on a second connection while its transaction is
    open. The finished row keeps the report (or every problem that refused the import) and
    drops the zip. The row belongs to its member: nobody else reads it, administrators
    included (a not-permitted import is a missing one).
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        REFUSED = "refused"  # a note or entry failed the checks: nothing was imported
        FAILED = "failed"  # the import could not finish (killed, over its time): nothing was imported

    class Kind(models.TextChoices):
        OBSIDIAN = "obsidian"
        NOTION = "notion"

    UNFINISHED = (State.QUEUED, State.RUNNING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    vault = models.CharField(max_length=64, blank=True, default="")  # Obsidian only; "" = the zipped folder's name
    workspace = models.CharField(max_length=16, choices=Workspace.choices, null=True, blank=True)
    # The notes the upload held, re-zipped (attachments as names only); emptied when the import finishes.
    archive = models.BinaryField(editable=False)
    archive_bytes = models.PositiveBigIntegerField(default=0)
    other_files = models.PositiveIntegerField(default=0)  # Notion: files of the export never read
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    notes_total = models.PositiveIntegerField(default=0)  # an estimate until the notes are read
    notes_done = models.PositiveIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)  # ImportReport.as_dict() when done
    problems = models.JSONField(default=list, blank=True)  # every problem, when refused
    error = models.CharField(max_length=300, blank=True, default="")  # why it failed
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["queued", "running", "done", "refused", "failed"]),
                name="memory_vault_import_state",
            ),
            # One import at a time per member: a second would queue behind the first and
            # race it over the same origins.
            models.UniqueConstraint(
                fields=["member"], condition=Q(state__in=["queued", "running"]), name="memory_vault_import_one_open"
            ),
        ]
        indexes = [
            models.Index(fields=["member", "-created_at"], name="memory_vault_import_member"),
            models.Index(fields=["state", "lease_expires_at"], name="memory_vault_import_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} import {self.pk} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state not in self.UNFINISHED
