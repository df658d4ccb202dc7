"""Celery tasks of people's accounts."""

from __future__ import annotations

from importlib import import_module

from celery import shared_task
from django.conf import settings


@shared_task(name="accounts.clear_sessions", ignore_result=True)
def clear_sessions_task() -> None:
    """Delete expired sessions (Django's ``clearsessions``), and with them their
    ``SignedInSession`` rows: nothing else removes a session nobody signed out of."""
    engine = import_module(settings.SESSION_ENGINE)
    engine.SessionStore.clear_expired()
