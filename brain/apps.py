from __future__ import annotations

from django.apps import AppConfig


class BrainConfig(AppConfig):
    """The project package as an app: its templates and management commands."""

    name = "brain"
    verbose_name = "Brain"
