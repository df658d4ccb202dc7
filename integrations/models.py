"""Integration secrets (encrypted at rest) and Slack's one-time links and pending replies."""

from __future__ import annotations

from django.db import models

from answers.models import Question
from brain.leases import LeasedJob
from grants.models import Member


class IntegrationSecret(models.Model):
    """One secret setting, AES-GCM encrypted with a versioned key and a fresh nonce per write.

    The plaintext never leaves ``integrations.secrets``: administrators can set or replace a
    secret, never read it back.
    """

    name = models.CharField(max_length=64, unique=True)
    ciphertext = models.BinaryField()
    nonce = models.BinaryField()
    key_version = models.PositiveSmallIntegerField()
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(Member, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    def __str__(self) -> str:
        return f"{self.name} (key v{self.key_version})"


class SlackLink(models.Model):
    """A one-time code binding a Slack user id to the member who opens it while signed in."""

    code_hash = models.CharField(max_length=64, unique=True)
    slack_user_id = models.CharField(max_length=32)
    # As Slack's signed command named them, so the page that binds the account can say whose
    # it is in words a person recognises ("@mallory in acme"), not only an id.
    slack_user_name = models.CharField(max_length=80, blank=True, default="")
    slack_team = models.CharField(max_length=80, blank=True, default="")
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"link for {self.slack_user_id}"


class SlackDelivery(LeasedJob):
    """Where to post a question's answer: Slack's response URL stays here, never in a task payload.

    Leased (``brain.leases.LeasedJob``): the task chain answering and posting it holds the
    lease, a retry waiting out its countdown included, so a second call or the sweep never
    posts the same answer twice (``integrations.slack.slack_answer``).
    """

    question = models.OneToOneField(Question, on_delete=models.CASCADE, related_name="slack_delivery")
    response_url = models.URLField(max_length=1000)
    delivered_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"slack delivery for question {self.question_id}"
