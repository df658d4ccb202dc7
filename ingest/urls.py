from __future__ import annotations

from django.urls import path

from ingest import views

app_name = "ingest"
urlpatterns = [
    path("sources/", views.uploads, name="uploads"),
    path("sources/upload", views.upload, name="upload"),
    path("sources/<path:key>/original", views.original, name="original"),
    path("sources/<path:key>/retry", views.retry, name="retry"),
    path("sources/<path:key>", views.source, name="source"),
    path("api/sources", views.api_sources, name="api-sources"),
    path("api/sources/<path:key>", views.api_source, name="api-source"),
]
