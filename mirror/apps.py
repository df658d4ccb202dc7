from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class MirrorConfig(AppConfig):
    """A one-way git mirror of the corpus: the repository is an output, never an input."""

    name = "mirror"
    verbose_name = "Git mirror"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from brain.health import register_detail
        from builds.models import Promotion
        from mirror.services import mirrors_health

        post_save.connect(_promoted, sender=Promotion, dispatch_uid="mirror-after-promotion")
        register_detail("mirrors", mirrors_health)


def _promoted(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """Queue a push of every enabled mirror once the promotion's transaction commits."""
    if not created:
        return
    from brain.jobs import enqueue_on_commit
    from mirror.models import Mirror
    from mirror.tasks import mirror_push_task

    for mirror_id in Mirror.objects.filter(enabled=True).values_list("pk", flat=True):
        enqueue_on_commit(mirror_push_task, mirror_id)
