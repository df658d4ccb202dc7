from __future__ import annotations

from django.urls import path

from answers import views

app_name = "answers"
urlpatterns = [
    path("ask", views.ask, name="ask"),
    path("ask/<int:question_id>", views.question, name="question"),
]
