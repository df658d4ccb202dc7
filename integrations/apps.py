from __future__ import annotations

from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """Outside systems: Slack slash commands, and the encrypted secrets integrations need."""

    name = "integrations"
    verbose_name = "Integrations"
