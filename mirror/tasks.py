"""Celery tasks of the git mirror: ids only; the state of each push is the mirror's row."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="mirror.push", ignore_result=True, acks_late=True)
def mirror_push_task(mirror_id: int) -> None:
    """Bring one mirror up to date (after a promotion). While another run holds the mirror,
    this one asks it to run again when done, so a promotion is never skipped."""
    from mirror.services import mirror_run

    outcome = mirror_run(mirror_id=mirror_id)
    logger.info("mirror %s: %s %s", mirror_id, outcome.state, outcome.commit or outcome.detail)


@shared_task(name="mirror.sweep", ignore_result=True)
def mirror_sweep_task() -> None:
    """Every enabled mirror, on beat: changes outside promotions, lost pushes, a moved remote.
    Each mirror as a task of its own: one mirror's slow remote neither spends another's time
    limit nor stops the rest."""
    from mirror.models import Mirror

    for mirror_id in Mirror.objects.filter(enabled=True).values_list("pk", flat=True):
        try:
            mirror_push_task.delay(mirror_id)
        except Exception:
            logger.exception("mirror %s: could not queue its run; the next sweep tries again", mirror_id)
