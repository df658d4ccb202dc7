from __future__ import annotations

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    """OAuth 2.1 for agents acting for a person: the deploy is its own authorization server."""

    name = "oauth"
    verbose_name = "Connected apps (OAuth)"

    def ready(self) -> None:
        from brain import callers
        from oauth.tokens import access_token_caller

        callers.register("", access_token_caller)
