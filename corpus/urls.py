from __future__ import annotations

from django.urls import path

from corpus import views

app_name = "corpus"
urlpatterns = [
    path("search", views.search_page, name="search"),
    path("pages/", views.browse, name="browse"),
    path("pages/<path:path>", views.page_detail, name="page-detail"),
]
