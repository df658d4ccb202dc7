"""Root URL configuration."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts.views import SignInView
from brain.health import healthz
from home.views import home

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("", include("builds.urls")),  # before corpus: a page's /history route is the builds app's
    path("", include("corpus.urls")),
    path("", include("mcp_api.urls")),
    path("", include("oauth.provider_urls")),
    path("", include("oauth.urls")),
    path("", include("memory.urls")),
    path("", include("ingest.urls")),
    path("", include("integrations.urls")),
    path("", include("answers.urls")),
    path("", include("accounts.urls")),
]

handler400 = "brain.errors.bad_request"
handler403 = "brain.errors.permission_denied"
handler404 = "brain.errors.page_not_found"
handler500 = "brain.errors.server_error"
