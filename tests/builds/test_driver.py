"""The durable driver survives a worker killed mid-build: one sweep, nothing lost or doubled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test import TransactionTestCase

from brain.launcher import PROJECT_ROOT
from builds.driver import files_from_zip, import_job_create, jobs_sweep
from builds.models import Build, BuildChange, BuildJob, BuildJobItem
from corpus.models import Revision
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import page_markdown

PAGES = 220
WORKER_LOG = os.path.join(tempfile.gettempdir(), "brain-test-celery-worker.log")


def _worker_env(lease_seconds: int) -> dict[str, str]:
    url = urlsplit(os.environ["DATABASE_URL"])
    return {
        **os.environ,
        "DATABASE_URL": urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"])),
        "DJANGO_SETTINGS_MODULE": "brain.settings_test",
        "BRAIN_BUILD_BATCH_SIZE": "10",
        "BRAIN_BUILD_LEASE_SECONDS": str(lease_seconds),
        "BRAIN_LOG_LEVEL": "WARNING",
    }


def _start_worker(lease_seconds: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "brain", "worker", "--pool", "solo", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
        cwd=PROJECT_ROOT,
        env=_worker_env(lease_seconds),
        start_new_session=True,  # its own process group, so SIGKILL reaches all of it
        # Kept for diagnosis when the test fails (CI prints the path in the assertion).
        stdout=open(WORKER_LOG, "ab"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip


def _kill(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (worker log: {WORKER_LOG})")


class DurableDriverTests(TransactionTestCase):
    def setUp(self) -> None:
        redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
        self.alice = member_create(actor=SYSTEM, username="alice")
        grant_issue(actor=SYSTEM, member=self.alice, path="imports/", permission="suggest")

    def test_sigkilled_worker_costs_one_sweep_not_the_build(self) -> None:
        files = [
            (
                f"imports/batch-{i // 50}/page-{i:03d}.md",
                page_markdown(title=f"Page {i}", body=f"# Page {i}\n\n## Facts\n\nFact number {i} about the import.\n"),
            )
            for i in range(PAGES)
        ]
        lease = 5
        worker = _start_worker(lease)
        try:
            build = import_job_create(requester=self.alice, files=files, title="Big import")
            job = BuildJob.objects.get(build=build)

            def drafted() -> int:
                return BuildJobItem.objects.filter(job=job, done=True).count()

            def in_flight() -> bool:
                return BuildJob.objects.filter(pk=job.pk, lease_token__isnull=False).exists()

            # Killed while a step holds the lease: between two steps the next message is already
            # queued and the new worker simply goes on, and the sweep would have nothing to do.
            _wait_for(lambda: drafted() >= 30 and in_flight(), 120, "the first batches, a step in flight")
            _kill(worker)
            killed_at = drafted()
            assert killed_at < PAGES
            worker = _start_worker(lease)
            time.sleep(lease + 1)  # the dead worker's lease expires
            assert jobs_sweep() == 1  # what beat does once a minute
            _wait_for(lambda: BuildJob.objects.get(pk=job.pk).state == BuildJob.State.DONE, 180, "the build to finish")
        finally:
            _kill(worker)
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        paths = sorted(BuildChange.objects.filter(build=build).values_list("path", flat=True))
        assert paths == sorted(path for path, _ in files)
        # The batch in flight at the kill was rolled back, not half-written: exactly one
        # draft revision per page, none lost, none duplicated.
        assert Revision.objects.filter(path__startswith="imports/").count() == PAGES
        assert BuildJob.objects.get(pk=job.pk).attempts >= 2


class ZipTests(TransactionTestCase):
    def test_zip_bombs_and_encrypted_members_are_refused(self) -> None:
        import io
        import zipfile

        from builds.driver import ArchiveRefused

        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("topics/bomb.md", "x" * (2 * 1024 * 1024))
        with pytest.raises(ArchiveRefused, match="larger than"):
            files_from_zip(buffer.getvalue())
        with pytest.raises(ArchiveRefused, match="not a valid zip"):
            files_from_zip(b"not a zip")
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("topics/a.md", "hello")
            archive.writestr("notes.txt", "ignored")
        assert files_from_zip(buffer.getvalue()) == [("topics/a.md", "hello")]
