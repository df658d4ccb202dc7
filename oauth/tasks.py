"""Celery tasks of the OAuth provider."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="oauth.clear_expired", ignore_result=True)
def clear_expired_tokens_task() -> None:
    """Delete expired access tokens, grants and refresh tokens (django-oauth-toolkit's
    ``cleartokens``). Revoked refresh tokens are kept until they expire: reuse detection
    needs them. Redeemed codes are kept as long as a refresh token of theirs could live."""
    import datetime as dt

    from django.utils import timezone
    from oauth2_provider.models import clear_expired

    from oauth.config import REFRESH_TOKEN_SECONDS
    from oauth.models import RedeemedCode

    clear_expired()
    cutoff = timezone.now() - dt.timedelta(seconds=REFRESH_TOKEN_SECONDS)
    RedeemedCode.objects.filter(created_at__lt=cutoff).delete()
