"""REST API v1 routes (``/api/v1/``), its OpenAPI document and docs UI."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from api import lists, views
from api.docs import DocsView

app_name = "api"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", DocsView.as_view(url_name="api:schema"), name="docs"),
    path("pages", lists.Pages.as_view(), name="pages"),
    path("pages/<path:path>/relationships", views.PageRelationships.as_view(), name="page-relationships"),
    path("pages/<path:path>/history", views.PageHistory.as_view(), name="page-history"),
    path("pages/<path:path>", views.Page.as_view(), name="page"),
    path("search", views.Search.as_view(), name="search"),
    path("figures/<str:key>", views.Figure.as_view(), name="figure"),
    path("sources", lists.Sources.as_view(), name="sources"),
    path("uploads", views.SourceUpload.as_view(), name="uploads"),
    path("sources/search", views.SourceSearch.as_view(), name="source-search"),
    path("sources/<path:key>/tags", views.SourceTags.as_view(), name="source-tags"),
    path("sources/<path:key>/status", views.SourceStatus.as_view(), name="source-status"),
    path("sources/<path:key>", views.Source.as_view(), name="source"),
    path("memories", lists.Memories.as_view(), name="memories"),
    path("memories/recall", views.MemoryRecall.as_view(), name="memory-recall"),
    path("memories/links", views.MemoryLinks.as_view(), name="memory-links"),
    path("memories/count", views.MemoryCount.as_view(), name="memory-count"),
    path("memories/stats", views.MemoryStats.as_view(), name="memory-stats"),
    path("memories/export", views.MemoryExport.as_view(), name="memory-export"),
    path("memories/import", views.MemoryImport.as_view(), name="memory-import"),
    path("memories/<str:id>", views.MemoryEntry.as_view(), name="memory"),
    path("memories/<str:id>/append", views.MemoryAppend.as_view(), name="memory-append"),
    path("memories/<str:id>/status", views.MemoryStatus.as_view(), name="memory-status"),
    path("memories/<str:id>/share", views.MemoryShare.as_view(), name="memory-share"),
    path("memories/<str:id>/connections", views.MemoryConnections.as_view(), name="memory-connections"),
    path("team/workspaces", views.Workspaces.as_view(), name="workspaces"),
    path("export", views.CorpusExport.as_view(), name="export"),
    path("questions", views.Questions.as_view(), name="questions"),
    path("questions/<int:question_id>", views.QuestionAnswer.as_view(), name="question"),
    path("builds", views.Builds.as_view(), name="builds"),
    path("builds/import", views.BuildImport.as_view(), name="build-import"),
    path("builds/<str:build_id>", views.BuildStatus.as_view(), name="build"),
    path("builds/<str:build_id>/diff", views.BuildDiff.as_view(), name="build-diff"),
    path("builds/<str:build_id>/submit", views.BuildSubmit.as_view(), name="build-submit"),
]
