"""Handing work to Celery: ids only, after commit, and never failing the request for it.

Every background job (a build step, an extraction, a question, a Slack delivery, a memory
verdict) is a database row first; the queue message only says "look at row N". So a
message that could not be sent — the broker was down when the transaction committed — is
not lost work: the row is still waiting, and the job's sweep (on beat, every minute) sends
it again. Two rules follow:

- ``enqueue_on_commit`` never raises: the person's write has committed, and an error page
  for it would be a lie. It logs a warning instead.
- a sweep re-sends a job that was never picked up only when ``queue_idle()`` says the
  broker holds no waiting messages. Re-sending every waiting job each minute would flood
  a backlog with duplicates (each one a no-op, but queued ahead of new work). A job whose
  worker died mid-run is re-sent as soon as its lease expires, whatever the queue holds.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import Q
from kombu.exceptions import OperationalError

from brain.redis_outage import ERRORS, REDIS

logger = logging.getLogger(__name__)


def task_named(task: Any) -> Any:
    """The Celery task registered as ``task`` (a name such as ``"answers.run"``), or ``task`` itself.

    Services queue their jobs by name, so a service never imports its app's tasks module
    (which imports the service): the one arrow is tasks → services.
    """
    if isinstance(task, str):
        from brain.celery import app

        if task not in app.tasks:
            # Autodiscovery is lazy: only a worker's start-up imports every app's tasks module.
            # A web process queues by name without ever importing them, so do it here, once
            # (imports are cached; the registry then answers every later name).
            app.loader.import_default_modules()
        return app.tasks[task]
    return task


def enqueue_on_commit(task: Any, *args: Any) -> None:
    """Send ``task.delay(*args)`` (a task or its registered name) once the current transaction
    commits; log, never raise, on failure."""

    def send() -> None:
        name = task if isinstance(task, str) else getattr(task, "name", repr(task))
        if REDIS.skip():
            # Redis (the broker) failed a moment ago: do not make this request wait on it too.
            logger.warning("not queueing %s while Redis is unreachable; its sweep will send it", name)
            return
        try:
            task_named(task).delay(*args)
        except Exception as exc:  # any broker failure: the row waits for the sweep
            if isinstance(exc, (OperationalError, TimeoutError, *ERRORS)):
                REDIS.failed(exc)  # the next requests of this process do not wait on it again
            logger.warning("could not queue %s (%s); its sweep will send it again", name, type(exc).__name__)

    transaction.on_commit(send)


def queue_idle() -> bool:
    """True when the default Celery queue holds no waiting message; False when the broker cannot say."""
    from brain.celery import app

    try:
        with app.connection_for_read() as connection:
            # A plain (not passive) declare: on Redis a queue with no messages has no key,
            # and a passive declare of it fails as if it did not exist.
            channel: Any = connection.default_channel  # kombu's stubs type it as the bare base channel
            declared = channel.queue_declare(queue=app.conf.task_default_queue)
            return int(declared.message_count) == 0
    except Exception as exc:
        logger.warning("could not read the queue length (%s)", type(exc).__name__)
        return False


def resend_lost(task: Any, rows: Any, *, never_started: Q, died: Q | None = None) -> int:
    """The sweep rule, for every kind of job: send ``task.delay(pk)`` again for each of
    ``rows`` (a queryset) whose worker died (``died``: at once) or that never started
    (``never_started``: only when the queue is idle). Returns how many were sent."""
    lost = died
    if queue_idle():
        lost = never_started if lost is None else lost | never_started
    if lost is None:
        return 0
    ids = list(rows.filter(lost).values_list("pk", flat=True))
    for pk in ids:
        task_named(task).delay(pk)
    return len(ids)
