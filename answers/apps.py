from __future__ import annotations

from django.apps import AppConfig


class AnswersConfig(AppConfig):
    """Questions answered from the corpus with grounded citations; Slack commands."""

    name = "answers"
    verbose_name = "Answers"
