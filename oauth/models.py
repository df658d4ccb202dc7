"""What the OAuth provider keeps beyond django-oauth-toolkit's own tables."""

from __future__ import annotations

from django.db import models


class RedeemedCode(models.Model):
    """An authorization code that was exchanged for tokens, kept so a replay can be answered.

    RFC 6749 §4.1.2: a code used twice means it leaked, and the tokens issued from it
    should be revoked. The toolkit deletes a code once it is redeemed, so this row keeps its
    SHA-256 (never the code) and the refresh-token family it started. Rows are deleted by the
    daily token sweep once the family's refresh tokens could no longer be in use.
    """

    code_sha256 = models.CharField(max_length=64, unique=True)
    application_id = models.BigIntegerField()
    access_token_id = models.BigIntegerField(null=True)
    token_family = models.UUIDField(null=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"redeemed code {self.code_sha256[:12]}…"
