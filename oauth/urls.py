"""The people's side of OAuth: the Connected apps page."""

from __future__ import annotations

from django.urls import path

from oauth import views

app_name = "oauth"
urlpatterns = [
    path("account/apps/", views.connected_apps, name="connected-apps"),
    path("account/apps/<int:application_id>/revoke", views.connected_app_revoke, name="connected-app-revoke"),
]
