from __future__ import annotations

from django.apps import AppConfig


class AnswersConfig(AppConfig):
    """Questions answered from the corpus with grounded citations; Slack commands."""

    name = "answers"
    verbose_name = "Answers"

    def ready(self) -> None:
        from answers.credentials import CREDENTIAL_PREFIX, question_credential_resolve
        from brain import callers

        callers.register(CREDENTIAL_PREFIX, question_credential_resolve)
