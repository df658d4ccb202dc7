"""The governed corpus: pages, revisions, chunks, sources (captures), figures and links."""

from __future__ import annotations

from typing import cast

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Substr
from pgvector.django import HnswIndex, VectorField

from corpus.querysets import (
    ChunkQuerySet,
    FigureQuerySet,
    PageQuerySet,
    RevisionQuerySet,
    SourceQuerySet,
)
from grants.models import CATEGORY_SQL_REGEX, Member, Sensitivity

PAGE_PATH_SQL_REGEX = r"^([a-z0-9_-][a-z0-9._-]*/)*[a-z0-9_-][a-z0-9._-]*\.md$"
SOURCE_KEY_SQL_REGEX = r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$"
EMBEDDING_DIMENSIONS = 384


class Page(models.Model):
    """A live page of the corpus at a canonical path.

    A row exists once a revision of it has been promoted by a person; ``current_revision``
    is what readers see. Title, type, owner, status, category, sensitivity and as_of are
    copied from that revision's frontmatter so the access predicate and listings read
    columns, not JSON.
    """

    path = models.CharField(max_length=255, unique=True)
    current_revision = models.OneToOneField(
        "Revision", on_delete=models.PROTECT, related_name="current_of", null=True, blank=True
    )
    title = models.CharField(max_length=200)
    type = models.CharField(max_length=32)
    owner = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="owned_pages")
    status = models.CharField(max_length=16)
    change_policy = models.CharField(max_length=8, default="gate")
    category = models.CharField(max_length=64, null=True, blank=True)
    sensitivity = models.PositiveSmallIntegerField(choices=Sensitivity.choices, default=Sensitivity.ORDINARY)
    as_of = models.DateField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PageQuerySet.as_manager()

    class Meta:
        ordering = ["path"]
        constraints = [
            models.CheckConstraint(
                condition=Q(path__regex=PAGE_PATH_SQL_REGEX) & ~Q(path__contains="//"), name="page_path_canonical"
            ),
            models.CheckConstraint(condition=Q(sensitivity__in=[0, 1, 2]), name="page_sensitivity_known"),
            models.CheckConstraint(condition=Q(change_policy__in=["gate", "owner"]), name="page_change_policy_known"),
            models.CheckConstraint(
                condition=Q(category__isnull=True) | Q(category__regex=CATEGORY_SQL_REGEX), name="page_category_form"
            ),
        ]
        indexes = [
            models.Index(fields=["category"]),
            models.Index(fields=["type"]),
            # The access predicate's prefix ranges read this index only: with the page's
            # tier, id and live revision included, 100 prefix grants over 10k pages cost
            # 4.4 ms instead of 8.0 ms of heap visits (bench.search_scale).
            models.Index(
                fields=["path"],
                name="page_path_access",
                opclasses=["varchar_pattern_ops"],
                include=["sensitivity", "id", "current_revision"],
            ),
        ]

    def __str__(self) -> str:
        return self.path


class Revision(models.Model):
    """An immutable snapshot of a page's Markdown: frontmatter, body and their hash.

    A trigger refuses changes to the content columns. A revision is a draft until a
    person promotes it (``promoted_by``/``promoted_at`` are then set, once). ``page`` is
    null for a draft of a page that is not live yet; ``path`` always says where it goes.
    """

    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="revisions", null=True, blank=True)
    path = models.CharField(max_length=255)
    frontmatter = models.JSONField()
    body = models.TextField()
    # The frontmatter exactly as its author wrote it (comments, key order, quoting): what
    # the review screen shows. ``frontmatter`` is the parsed value every rule reads.
    frontmatter_text = models.TextField(blank=True, default="")
    sha256 = models.CharField(max_length=64)
    author = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    promoted_by = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    promoted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RevisionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(promoted_at__isnull=True) | Q(page__isnull=False), name="revision_promoted_has_page"
            ),
        ]
        indexes = [
            models.Index(fields=["path"]),
            models.Index(fields=["sha256"]),
            # "Recently approved" walks revisions newest first and stops at the first few readable.
            models.Index(
                fields=["-promoted_at", "-id"], name="revision_promoted_recent", condition=Q(promoted_at__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path}@{self.sha256[:12]}"

    @property
    def is_promoted(self) -> bool:
        return self.promoted_at is not None


class Chunk(models.Model):
    """A content-addressed piece of a page: id = sha256(heading path + body).

    Chunks are shared by every revision that contains the same text under the same
    headings, so an unchanged section is never embedded twice. Their text is never edited;
    a chunk written while the embedder was down has no vector (found by keyword only) until
    ``corpus.backfill_embeddings`` fills it.
    """

    id = models.CharField(max_length=64, primary_key=True)
    heading_path = models.TextField()
    body = models.TextField()
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True, default="")
    # NFKC forms for keyword search (see corpus.lexical): English words, and character
    # bigrams of scripts written without spaces, both in the one tsvector.
    lexical_heading = models.TextField(default="")
    lexical_body = models.TextField(default="")
    cjk_terms = models.TextField(default="", blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("lexical_heading", weight="A", config="english")
        + SearchVector("lexical_body", weight="B", config="english")
        + SearchVector("cjk_terms", weight="B", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ChunkQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(name="chunk_search_vector_gin", fields=["search_vector"]),
        ]

    def __str__(self) -> str:
        return f"{self.heading_path or '(top)'} [{self.id[:12]}]"


class RevisionChunk(models.Model):
    """Chunk ``ordinal`` of a revision."""

    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="chunk_links")
    chunk = models.ForeignKey(Chunk, on_delete=models.PROTECT, related_name="revision_links")
    ordinal = models.PositiveIntegerField()

    class Meta:
        ordering = ["revision", "ordinal"]
        # The foreign keys' own indexes serve lookups by chunk and by revision; a second
        # index on chunk only cost every promotion another write.
        constraints = [models.UniqueConstraint(fields=["revision", "ordinal"], name="revision_chunk_ordinal")]

    def __str__(self) -> str:
        return f"{self.revision_id}#{self.ordinal}"


class LiveChunk(models.Model):
    """A chunk of a live page's current revision, with its search vector: the lexical arm's index.

    Derived data, like an index: the database keeps it (triggers in migration corpus 0018) when
    a page's current revision changes or a current revision gains chunks, so every writer keeps
    it true and no Python code writes it. The lexical arm matches here rather than in
    ``corpus_chunk`` so the caller's visibility is a hash lookup on ``revision_id`` per match,
    not an index probe from chunk to revision (docs/search.md, "Scale"). A revision is current
    for at most one page.
    """

    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="+")
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="+", db_index=False)
    search_vector = SearchVectorField()

    class Meta:
        indexes = [GinIndex(name="livechunk_search_vector_gin", fields=["search_vector"])]

    def __str__(self) -> str:
        return f"{self.revision_id}:{self.chunk_id[:12]}"


class LexemeStatistic(models.Model):
    """How many chunks of live, ordinary-sensitivity pages hold each lexeme: the lexical arm's
    inverse document frequencies (``corpus.lexemes``, refreshed on beat). The row whose lexeme
    is empty holds how many chunks were counted. Restricted and secret pages are left out, so
    their words never shape anyone's ranking."""

    lexeme = models.TextField(primary_key=True)
    chunks = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.lexeme or '(all)'}: {self.chunks}"


_SourceManagerBase = models.Manager.from_queryset(SourceQuerySet)


class SourceManager(_SourceManagerBase["Source"]):
    """Sources without their ``search_vector`` loaded: it is for PostgreSQL's index and can be
    near a megabyte a capture, and no Python code reads it."""

    def get_queryset(self) -> SourceQuerySet:
        return cast(SourceQuerySet, super().get_queryset().defer("search_vector"))


# Of a capture's text, the characters its words are indexed from (``Source.search_vector``). A
# tsvector holds at most 1 MB, and a stored column that overflows it refuses the row (and
# stopped the migration adding it): the densest text measured — distinct hyphenated CJK pairs,
# each indexed whole and by its parts — costs 8.3 bytes a character, so 50,000 characters stay
# under 0.5 MB with room for worse. The capture's chunks are still found by meaning, all of them.
LEXICAL_SOURCE_CHARACTERS = 50_000


class Source(models.Model):
    """A capture that claims point at: a document, a ticket, an interview, a web page, a note.

    ``key`` is its citable id (``capture:<key>`` in frontmatter). Grants reach it through
    the scope path ``captures/<key>``, its category and its sensitivity tier.
    """

    class Kind(models.TextChoices):
        DOCUMENT = "document"
        TICKET = "ticket"
        INTERVIEW = "interview"
        WEB = "web"
        NOTE = "note"

    key = models.CharField(max_length=200, unique=True)
    scope_path = models.CharField(max_length=255, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    title = models.CharField(max_length=300)
    text = models.TextField(blank=True)
    uri = models.CharField(max_length=2000, blank=True)
    sha256 = models.CharField(max_length=64)
    tags = ArrayField(models.CharField(max_length=128), default=list, blank=True)
    category = models.CharField(max_length=64, null=True, blank=True)
    sensitivity = models.PositiveSmallIntegerField(choices=Sensitivity.choices, default=Sensitivity.ORDINARY)
    captured_at = models.DateTimeField()
    created_by = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Moves whenever the capture's exported text or metadata may have changed (the git
    # mirror re-renders a capture only then); ``.update()`` callers set it themselves.
    updated_at = models.DateTimeField(auto_now=True)
    # False while the capture is a draft on a build branch: no reader sees it until promotion.
    is_live = models.BooleanField(default=True)
    # Kept by PostgreSQL on every write, GIN-indexed: capture search matches words without
    # parsing every visible capture's text again for each query.
    search_vector = models.GeneratedField(
        expression=SearchVector("title", weight="A", config="english")
        + SearchVector(Substr("text", 1, LEXICAL_SOURCE_CHARACTERS), weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = SourceManager()

    class Meta:
        ordering = ["key"]
        # Prefix grants on captures/… are matched as a range on scope_path (grants.predicates).
        indexes = [
            models.Index(fields=["scope_path"], name="source_scope_prefix", opclasses=["varchar_pattern_ops"]),
            GinIndex(name="source_search_vector_gin", fields=["search_vector"]),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(key__regex=SOURCE_KEY_SQL_REGEX), name="source_key_form"),
            models.CheckConstraint(
                condition=Q(kind__in=["document", "ticket", "interview", "web", "note"]), name="source_kind_known"
            ),
            models.CheckConstraint(condition=Q(sensitivity__in=[0, 1, 2]), name="source_sensitivity_known"),
            models.CheckConstraint(
                condition=Q(category__isnull=True) | Q(category__regex=CATEGORY_SQL_REGEX), name="source_category_form"
            ),
        ]

    def __str__(self) -> str:
        return f"capture:{self.key}"


class Figure(models.Model):
    """One recorded value of a tracked figure (e.g. ``discount-ceiling`` = 12 %).

    Every record is kept: the current value is the latest by ``as_of`` then recording
    time; the rest is its history.
    """

    key = models.CharField(max_length=128)
    value = models.DecimalField(max_digits=24, decimal_places=6)
    unit = models.CharField(max_length=32, blank=True)
    as_of = models.DateField()
    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="figures")
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="figures", null=True, blank=True)
    recorded_by = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # False while the value is a draft on a build branch: no reader sees it until promotion.
    is_live = models.BooleanField(default=True)
    # The page's live revision when the value went live (its scope then: path, category,
    # sensitivity): a reader's history of the figure holds only the values recorded where
    # they could read. Kept through a move. Empty for values recorded before it was kept.
    recorded_under = models.ForeignKey(
        "corpus.Revision", on_delete=models.SET_NULL, related_name="+", null=True, blank=True
    )

    objects = FigureQuerySet.as_manager()

    class Meta:
        ordering = ["key", "-as_of", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(key__regex=r"^[a-z0-9][a-z0-9._-]{0,127}$"), name="figure_key_form")
        ]
        indexes = [models.Index(fields=["key", "-as_of", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.key}={self.value}{self.unit} ({self.as_of})"


class PageLink(models.Model):
    """A link from a live page to a page path: a Markdown link in the body or a ``related`` entry.

    Rebuilt from the current revision on every promotion. The target may not exist (yet).
    """

    class Kind(models.TextChoices):
        LINK = "link"
        RELATED = "related"

    from_page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="links_out")
    to_path = models.CharField(max_length=255)
    kind = models.CharField(max_length=8, choices=Kind.choices)

    class Meta:
        ordering = ["from_page", "kind", "to_path"]
        constraints = [models.UniqueConstraint(fields=["from_page", "to_path", "kind"], name="page_link_unique")]
        indexes = [models.Index(fields=["to_path"])]

    def __str__(self) -> str:
        return f"{self.from_page_id} -{self.kind}-> {self.to_path}"


class SourceChunk(models.Model):
    """A piece of a capture's (masked) text with its embedding, for semantic ``search_sources``.

    Written by document extraction; visible exactly when its source is.
    """

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True, default="")

    class Meta:
        ordering = ["source_id", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["source", "ordinal"], name="source_chunk_ordinal")]
        indexes = [
            HnswIndex(
                name="source_chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]

    def __str__(self) -> str:
        return f"{self.source_id}#{self.ordinal}"
