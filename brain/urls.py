"""Root URL configuration."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from brain.health import healthz
from brain.views import home

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
]

handler400 = "brain.errors.bad_request"
handler403 = "brain.errors.permission_denied"
handler404 = "brain.errors.page_not_found"
handler500 = "brain.errors.server_error"
