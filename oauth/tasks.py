"""Celery tasks of the OAuth provider."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="oauth.clear_expired", ignore_result=True)
def clear_expired_tokens_task() -> None:
    """Delete expired access tokens, grants and refresh tokens (django-oauth-toolkit's
    ``cleartokens``). Revoked refresh tokens are kept until they expire: reuse detection
    needs them."""
    from oauth2_provider.models import clear_expired

    clear_expired()
