"""A git remote that accepts connections and never answers: the run ends, recorded, with no
git left behind, and nobody waits on it to save the mirror."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from pathlib import Path

from django.db import connection
from django.test import TransactionTestCase, override_settings

from grants.principals import SYSTEM
from grants.services import grant_issue, service_account_create
from mirror.models import Mirror
from mirror.services import Outcome, mirror_run, mirror_save
from tests.fakes import silent_server


def processes_naming(text: str) -> list[str]:
    """Command lines of the running processes that mention ``text``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            line = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            if text in line:
                found.append(line)
    return found


class HungRemoteTests(TransactionTestCase):
    def setUp(self) -> None:
        scratch = Path(tempfile.mkdtemp(prefix="brain-mirror-faults-"))
        self.addCleanup(shutil.rmtree, scratch, True)
        overrides = override_settings(BRAIN_MIRROR_CACHE=scratch / "cache", BRAIN_MIRROR_RUN_SECONDS=4)
        overrides.enable()
        self.addCleanup(overrides.disable)
        self.service = service_account_create(actor=SYSTEM, name="docs-mirror")
        grant_issue(actor=SYSTEM, service_account=self.service, path="topics/", permission="read")

    def mirror_on(self, port: int) -> Mirror:
        return mirror_save(actor=SYSTEM, mirror=Mirror(name="docs", remote_url=f"http://127.0.0.1:{port}/brain.git",
                                                       branch="main", service_account=self.service))  # fmt: skip

    def test_a_remote_that_never_answers_is_a_recorded_failure_with_no_git_left_behind(self) -> None:
        with silent_server() as port:
            mirror = self.mirror_on(port)
            outcome = mirror_run(mirror_id=mirror.pk)
            assert outcome.state == "failing"
            assert "did not finish" in outcome.detail
            stored = Mirror.objects.get(pk=mirror.pk)
            assert (stored.state, stored.last_error) == ("failing", outcome.detail)
            # git's children (git-remote-http holds the connection) went with it.
            for _ in range(20):
                if not processes_naming(f"127.0.0.1:{port}"):
                    break
                time.sleep(0.1)
            assert processes_naming(f"127.0.0.1:{port}") == []

    def test_saving_the_mirror_is_not_held_up_by_a_run_waiting_on_the_remote(self) -> None:
        with silent_server() as port:
            mirror = self.mirror_on(port)
            outcomes: list[Outcome] = []

            def run() -> None:
                try:
                    outcomes.append(mirror_run(mirror_id=mirror.pk))
                finally:
                    connection.close()

            runner = threading.Thread(target=run)
            runner.start()
            for _ in range(50):  # until git is talking to the remote
                if processes_naming(f"127.0.0.1:{port}"):
                    break
                time.sleep(0.1)
            assert runner.is_alive()
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '2s'")  # a wait on the run would fail here, not hang
            changed = Mirror.objects.get(pk=mirror.pk)
            changed.enabled = False
            mirror_save(actor=SYSTEM, mirror=changed)
            assert runner.is_alive(), "the save waited for the run"
            runner.join()
        # The run's view was stale: its result is not written over the administrator's change.
        assert outcomes[0].detail == "changed while running; run again"
        stored = Mirror.objects.get(pk=mirror.pk)
        assert stored.enabled is False
        assert stored.state == "new"
