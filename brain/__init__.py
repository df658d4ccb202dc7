"""Brain: one organisation's governed corpus and memory, on Django."""

from __future__ import annotations

from brain.celery import app as celery_app

__all__ = ["celery_app"]
__version__ = "0.1.0"
