"""The Celery app (standard Django recipe): settings under the ``CELERY_`` namespace."""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")

app = Celery("brain")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@after_setup_logger.connect
@after_setup_task_logger.connect
def _redact_secrets(logger: logging.Logger, **_kwargs: object) -> None:
    """Celery replaces the root handlers with its own: give each the secret-redacting filter."""
    from brain.logging import SecretRedactingFilter

    for handler in logger.handlers:
        if not any(isinstance(existing, SecretRedactingFilter) for existing in handler.filters):
            handler.addFilter(SecretRedactingFilter())
