from __future__ import annotations

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    """OAuth 2.1 for agents acting for a person: the deploy is its own authorization server."""

    name = "oauth"
    verbose_name = "Connected apps (OAuth)"
