"""Real Celery workers for fault tests, on a queue of their own.

The test broker (``brain.settings_test``: Redis database 15) is shared with other tests
that run workers, and ``tests/builds/test_driver.py`` flushes it. So each fault test sends
and consumes on a private queue, never flushes anything, and on the way out deletes only
the keys of its own queue — including the unacknowledged message a SIGKILLed worker leaves
in kombu's ``unacked`` hash, which another worker would otherwise restore an hour later.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from django.conf import settings
from django.db import connection
from django.test import override_settings

from brain.celery import app
from brain.launcher import PROJECT_ROOT

WORKER_LOG = os.path.join(tempfile.gettempdir(), "brain-test-fault-workers.log")

# The worker's own default queue must be the private one too: work a worker queues itself
# (a build's next step, a task's retry) must reach the same worker, not the shared queue.
# The test settings keep media in memory, which a second process cannot see: the worker
# gets the test's media folder (``MEDIA_ENV``) when it names one.
MEDIA_ENV = "BRAIN_FAULTS_MEDIA_ROOT"
BOOTSTRAP = (
    "import os, sys\n"
    "from django.conf import settings\n"
    "from brain.celery import app\n"
    f"root = os.environ.get({MEDIA_ENV!r})\n"
    "if root:\n"
    "    backend = {'BACKEND': 'django.core.files.storage.FileSystemStorage', 'OPTIONS': {'location': root}}\n"
    "    settings.STORAGES = {**settings.STORAGES, 'default': backend}\n"
    "app.conf.task_default_queue = sys.argv[1]\n"
    "app.conf.worker_enable_remote_control = False\n"
    "app.worker_main(sys.argv[2:])\n"
)


@contextlib.contextmanager
def private_queue() -> Iterator[str]:
    """A queue name no one else uses, made this process's default for the duration; its keys
    are deleted afterwards (the queue, its binding and its unacknowledged messages)."""
    name = f"brain-faults-{uuid.uuid4().hex[:12]}"
    before = app.conf.task_default_queue
    app.conf.task_default_queue = name
    try:
        yield name
    finally:
        app.conf.task_default_queue = before
        _delete_queue(name)


def _delete_queue(name: str) -> None:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in client.scan_iter(match=f"{name}*"):
        client.delete(key)
    client.delete(f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}")
    client.zrem("_kombu.binding_deadlines", name)
    for tag, raw in client.hscan_iter("unacked"):
        with contextlib.suppress(ValueError, TypeError, IndexError):
            _payload, exchange, routing_key = json.loads(raw)
            if name in (exchange, routing_key):
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)


def purge(name: str) -> None:
    """Drop the messages waiting on queue ``name`` (a broker that lost them)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in client.scan_iter(match=f"{name}*"):
        client.delete(key)


def shared_media(root: str) -> Any:
    """Settings for the test process that store media in ``root``, where a worker started
    with ``{MEDIA_ENV: root}`` reads them too."""
    backend = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": root}}
    return override_settings(STORAGES={**settings.STORAGES, "default": backend})


def worker_env(**extra: str) -> dict[str, str]:
    """The worker's environment: the test database, the test settings, and ``extra``."""
    url = urlsplit(os.environ["DATABASE_URL"])
    return {
        **os.environ,
        "DATABASE_URL": urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"])),
        "DJANGO_SETTINGS_MODULE": "brain.settings_test",
        "BRAIN_LOG_LEVEL": "WARNING",
        **extra,
    }


def start_worker(queue: str, **env: str) -> subprocess.Popen[bytes]:
    """A solo-pool worker consuming ``queue`` only, in its own process group (so a SIGKILL
    reaches all of it); its output goes to ``WORKER_LOG``."""
    return subprocess.Popen(
        [sys.executable, "-c", BOOTSTRAP, queue, "worker", "--pool", "solo", "--queues", queue,
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
        cwd=PROJECT_ROOT,
        env=worker_env(**env),
        start_new_session=True,
        stdout=open(WORKER_LOG, "ab"),  # the child owns it
        stderr=subprocess.STDOUT,
    )  # fmt: skip


def kill(worker: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker's whole process group (no warm shutdown, no acknowledgement)."""
    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> None:
    """Poll ``predicate`` until it is true; fail naming ``what`` (and the worker log) after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (worker log: {WORKER_LOG})")
