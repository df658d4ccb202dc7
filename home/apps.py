from __future__ import annotations

from django.apps import AppConfig


class HomeConfig(AppConfig):
    """The home page (what needs me) and the demo brain's seed: both compose every app below."""

    name = "home"
    default_auto_field = "django.db.models.BigAutoField"
