from __future__ import annotations

from django.urls import path

from mcp_api import views

app_name = "mcp_api"
urlpatterns = [
    path("api/mcp", views.person_mcp, name="person-mcp"),
    path("api/build/mcp", views.build_mcp, name="build-mcp"),
]
