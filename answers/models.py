"""Questions asked of the corpus, and how each was answered or refused."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from brain.leases import LeasedJob
from grants.models import Member, ServiceAccount


class Question(LeasedJob):
    """One question, answered under its asker's grants (or refused, with the reason)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        ANSWERED = "answered"
        REFUSED = "refused"
        FAILED = "failed"

    # Exactly one asker: a member, or a service account (through a question credential).
    asker = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="questions", null=True, blank=True)
    service_asker = models.ForeignKey(
        ServiceAccount, on_delete=models.PROTECT, related_name="questions", null=True, blank=True
    )
    text = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    mode = models.CharField(max_length=16, blank=True)  # "model" or "extractive"
    answer = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)  # ["path#anchor", ...]
    retrieved = models.JSONField(default=list, blank=True)  # paths retrieved or read for this question
    steps = models.JSONField(default=list, blank=True)  # [{"tool", "arguments"}] — no page text
    refusal_reason = models.CharField(max_length=300, blank=True)
    # A refusal that points somewhere: the pages (the asker's own search found them) that
    # answer about equally well, so the web page can link them.
    refusal_pages = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "answered", "refused", "failed"]), name="question_status"
            ),
            models.CheckConstraint(
                condition=Q(asker__isnull=False, service_asker__isnull=True)
                | Q(asker__isnull=True, service_asker__isnull=False),
                name="question_one_asker",
            ),
        ]

    def __str__(self) -> str:
        return f"question {self.pk} ({self.status})"

    @property
    def principal(self) -> Member | ServiceAccount:
        """Whose grants answer this question."""
        return self.asker if self.asker is not None else self.service_asker  # type: ignore[return-value]


class QuestionCredential(models.Model):
    """An opaque credential that may only file and await questions, as its owner.

    Issued by an administrator to a member or a service account; shown once, stored as a
    SHA-256 hash, revocable. On ``/api/mcp`` it sees exactly ``ask`` and ``await_answer``.
    """

    name = models.CharField(max_length=80)
    member = models.ForeignKey(Member, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    service_account = models.ForeignKey(
        ServiceAccount, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    issued_by = models.ForeignKey(Member, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(member__isnull=False, service_account__isnull=True)
                | Q(member__isnull=True, service_account__isnull=False),
                name="question_credential_one_owner",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
