from __future__ import annotations

from django.apps import AppConfig


class BuildsConfig(AppConfig):
    """Build branches of draft revisions, their credentials, review and promotion."""

    name = "builds"
    verbose_name = "Builds"

    def ready(self) -> None:
        from brain import callers
        from builds.services import TOKEN_PREFIX, build_credential_caller

        callers.register(TOKEN_PREFIX, build_credential_caller)
