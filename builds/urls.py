from __future__ import annotations

from django.urls import path

from builds import views

app_name = "builds"
urlpatterns = [
    path("builds/", views.build_queue, name="build-queue"),
    path("builds/import", views.build_import_upload, name="build-import"),
    path("builds/<str:public_id>/", views.build_detail, name="build-detail"),
    path("builds/<str:public_id>/progress", views.build_progress, name="build-progress"),
    path("builds/<str:public_id>/approve", views.build_approve, name="build-approve"),
    path("builds/<str:public_id>/reject", views.build_reject_view, name="build-reject"),
    path("builds/<str:public_id>/withdraw", views.build_withdraw, name="build-withdraw"),
    path("builds/<str:public_id>/submit", views.build_submit_view, name="build-submit"),
    # Page paths end in ".md", so ".../history" never names a page (corpus's reader route).
    path("pages/<path:path>/history", views.page_history_view, name="page-history"),
    path("api/builds/<str:public_id>", views.build_api_detail, name="api-build-detail"),
]
