from __future__ import annotations

from django.apps import AppConfig


class GrantsConfig(AppConfig):
    """Members, groups, service accounts, grants and the access predicate; the audit log."""

    name = "grants"
    verbose_name = "People and access"  # not "Grants": the admin listed it beside the Grants model
