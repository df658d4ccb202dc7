from __future__ import annotations

from django.apps import AppConfig


class BuildsConfig(AppConfig):
    """Build branches of draft revisions, their credentials, review and promotion."""

    name = "builds"
    verbose_name = "Builds"
