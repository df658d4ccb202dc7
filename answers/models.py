"""Questions asked of the corpus, and how each was answered or refused."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from grants.models import Member


class Question(models.Model):
    """One question, answered under its asker's grants (or refused, with the reason)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        ANSWERED = "answered"
        REFUSED = "refused"
        FAILED = "failed"

    asker = models.ForeignKey(Member, on_delete=models.PROTECT, related_name="questions")
    text = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    mode = models.CharField(max_length=16, blank=True)  # "model" or "extractive"
    answer = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)  # ["path#anchor", ...]
    retrieved = models.JSONField(default=list, blank=True)  # paths retrieved or read for this question
    steps = models.JSONField(default=list, blank=True)  # [{"tool", "arguments"}] — no page text
    refusal_reason = models.CharField(max_length=300, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "answered", "refused", "failed"]), name="question_status"
            )
        ]

    def __str__(self) -> str:
        return f"question {self.pk} ({self.status})"
