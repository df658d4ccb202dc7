"""Invitations and the register of signed-in sessions."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from grants.models import Member


class Invitation(models.Model):
    """A single-use, expiring link that lets an invited member set their password once.

    Only the SHA-256 of the token is stored (``brain.bearer``). An invitation is pending
    until it is accepted, withdrawn (a new one was sent, or the member was suspended) or
    it expires.
    """

    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    token_digest = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(Member, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(accepted_at__isnull=True) | Q(withdrawn_at__isnull=True), name="invitation_one_ending"
            )
        ]

    def __str__(self) -> str:
        return f"invitation of {self.member} ({self.state})"

    @property
    def state(self) -> str:
        from django.utils import timezone

        if self.accepted_at:
            return "accepted"
        if self.withdrawn_at:
            return "withdrawn"
        return "expired" if self.expires_at <= timezone.now() else "pending"


class SignedInSessionQuerySet(models.QuerySet["SignedInSession"]):
    def live(self) -> SignedInSessionQuerySet:
        """The sessions that still sign their browser in: an expired one is gone for the
        browser, whether or not the daily ``accounts.clear_sessions`` has removed its row yet."""
        return self.filter(session__expire_date__gt=timezone.now())


class SignedInSession(models.Model):
    """One browser session of a signed-in person, so they (and suspension) can end it.

    The row goes with its Django session (``on_delete=CASCADE``): signing out, ending it from
    the Security page and ``clearsessions`` all remove both. ``public_id`` names it in forms;
    the session key never leaves the server.
    """

    session = models.OneToOneField("sessions.Session", on_delete=models.CASCADE, related_name="+")
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="signed_in_sessions")
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=255, blank=True)
    via = models.CharField(max_length=16, default="password")

    objects = SignedInSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-last_seen_at"]

    def __str__(self) -> str:
        return f"session of {self.user} since {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def browser(self) -> str:
        """A short name a person recognises ("Chrome on Linux") from the stored user agent."""
        agent = self.user_agent
        name = next((label for token, label in _BROWSERS if token in agent), "Unknown browser")
        system = next((label for token, label in _SYSTEMS if token in agent), "")
        return f"{name} on {system}" if system else name


# First match wins: Edge and Opera say "Chrome" too, and Chrome says "Safari".
_BROWSERS = [
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("Firefox/", "Firefox"),
    ("HeadlessChrome", "Headless Chrome"),
    ("Chrome/", "Chrome"),
    ("Safari/", "Safari"),
    ("curl/", "curl"),
]
_SYSTEMS = [
    ("Android", "Android"),
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Windows", "Windows"),
    ("Mac OS X", "macOS"),
    ("CrOS", "ChromeOS"),
    ("Linux", "Linux"),
]
