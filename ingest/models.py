"""An uploaded document (its original bytes in object storage) and its extractions."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from brain.leases import LeasedJob
from corpus.models import Source
from grants.models import Member


class Document(models.Model):
    """The original file behind a capture. The bytes are stored once per content hash; two
    members who cannot see each other's capture of the same file each get their own row."""

    source = models.OneToOneField(Source, on_delete=models.CASCADE, related_name="document")
    sha256 = models.CharField(max_length=64, db_index=True)
    storage_name = models.CharField(max_length=200)  # "originals/<sha256>" in the default storage
    size = models.PositiveBigIntegerField()
    detected_type = models.CharField(max_length=16)
    filename = models.CharField(max_length=255, blank=True)
    uploaded_by = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.filename or self.sha256[:12]} ({self.detected_type})"


class Extraction(LeasedJob):
    """One run of text extraction: what read the bytes, where, how much was masked, how it ended.

    Masked counts are per category only — never the values. ``region`` is where the bytes
    were processed (``BRAIN_PROCESSING_REGION``).
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="extractions")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    extractor = models.CharField(max_length=40, blank=True)
    extractor_version = models.CharField(max_length=40, blank=True)
    char_count = models.PositiveIntegerField(default=0)
    pages = models.PositiveIntegerField(null=True, blank=True)
    masked = models.JSONField(default=dict, blank=True)
    region = models.CharField(max_length=64)
    error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed"]), name="extraction_status"
            )
        ]

    def __str__(self) -> str:
        return f"extraction {self.pk} of {self.document_id}: {self.status}"
