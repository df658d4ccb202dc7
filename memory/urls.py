"""Memory routes: the REST API and the dashboard."""

from __future__ import annotations

from django.urls import path, re_path

from memory import (
    api,
    calendar_views,
    capsule_views,
    capture_views,
    mail_views,
    settings_views,
    vault_api,
    vault_views,
    views,
)

app_name = "memory"
urlpatterns = [
    path("memory/", views.dashboard, name="dashboard"),
    path("memory/export", views.export, name="export"),
    path("memory/capture", capture_views.capture, name="capture"),
    path("memory/mail/", mail_views.mail, name="mail"),
    path("memory/calendars/", calendar_views.calendars, name="calendars"),
    path("memory/settings/", settings_views.memory_settings, name="settings"),
    path("memory/import/", vault_views.import_page, name="import"),
    path("memory/import/<str:job_id>/", vault_views.import_job_page, name="import-job"),
    path("memory/export/obsidian", vault_views.export_obsidian, name="export-obsidian"),
    path("memory/<uuid:memory_id>/", views.detail, name="detail"),
    # Only the actions there are: any other word is a 404 (as <str:action> it was a 405 on GET).
    re_path(
        r"^memory/(?P<memory_id>[0-9a-f-]{36})/(?P<action>edit|append|status|share|link|propose|forget)$",
        views.act,
        name="act",
    ),
    path("account/memory-tokens/", views.tokens, name="tokens"),
    path("prompt-capsules/core", capsule_views.core, name="capsule-core"),
    path("prompt-capsules/projects/<str:project_id>", capsule_views.project, name="capsule-project"),
    path("api/memory/capture", api.capture, name="api-capture"),
    path("api/memory/entries", api.entries, name="api-entries"),
    path("api/memory/entries/<str:memory_id>", api.entry, name="api-entry"),
    path("api/memory/entries/<str:memory_id>/append", api.append, name="api-append"),
    path("api/memory/entries/<str:memory_id>/status", api.status, name="api-status"),
    path("api/memory/entries/<str:memory_id>/share", api.share, name="api-share"),
    path("api/memory/entries/<str:memory_id>/connections", api.connections, name="api-connections"),
    path("api/memory/links", api.links, name="api-links"),
    path("api/memory/recall", api.recall, name="api-recall"),
    path("api/memory/count", api.count, name="api-count"),
    path("api/memory/stats", api.stats, name="api-stats"),
    path("api/memory/export", api.export, name="api-export"),
    path("api/memory/import", api.import_lines, name="api-import"),
    path("api/memory/import/obsidian", vault_api.import_obsidian, name="api-import-obsidian"),
    path("api/memory/import/notion", vault_api.import_notion, name="api-import-notion"),
    path("api/memory/imports/<str:job_id>", vault_api.import_status, name="api-import-job"),
    path("api/memory/export/obsidian", vault_api.export_obsidian, name="api-export-obsidian"),
    path("api/memory/calendar/import", calendar_views.api_import, name="api-calendar-import"),
]
