from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Private personal memories and the shared team layer; prompt capsules."""

    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from brain import callers
        from memory.tokens import TOKEN_PREFIX, api_token_resolve

        callers.register(TOKEN_PREFIX, api_token_resolve)
