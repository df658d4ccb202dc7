"""Celery tasks of the git mirror: ids only; the state of each push is the mirror's row."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="mirror.push", ignore_result=True, acks_late=True)
def mirror_push_task(mirror_id: int) -> None:
    """Bring one mirror up to date (after a promotion). A run waits for a running one on the
    same mirror, then sees its result, so a promotion is never skipped by a concurrent push."""
    from mirror.services import mirror_run

    outcome = mirror_run(mirror_id=mirror_id)
    logger.info("mirror %s: %s %s", mirror_id, outcome.state, outcome.commit or outcome.detail)


@shared_task(name="mirror.sweep", ignore_result=True)
def mirror_sweep_task() -> None:
    """Every enabled mirror, on beat: changes outside promotions, lost pushes, a moved remote.
    Each mirror on its own: one whose run fails even to record its failure (the database gone
    for a moment) does not stop the others."""
    from mirror.models import Mirror
    from mirror.services import mirror_run

    for mirror_id in Mirror.objects.filter(enabled=True).values_list("pk", flat=True):
        try:
            outcome = mirror_run(mirror_id=mirror_id)
        except Exception:
            logger.exception("mirror %s: the sweep's run failed; the next sweep tries again", mirror_id)
            continue
        if outcome.commit or outcome.state != Mirror.State.OK:
            logger.info("mirror %s: %s %s", mirror_id, outcome.state, outcome.commit or outcome.detail)
