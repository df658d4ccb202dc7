from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Private personal memories and the shared team layer; prompt capsules."""

    name = "memory"
    verbose_name = "Memory"
