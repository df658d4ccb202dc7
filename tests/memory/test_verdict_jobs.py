"""Verdict jobs (``memory.verdict_jobs``): a row per verdict, a lease, retries and a sweep.

The worker-killing and late-finisher cases are in ``tests/faults``; these are the job's
own rules, run in-process with a local fake model server.
"""

from __future__ import annotations

import datetime as dt
import socket
import uuid
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from brain import jobs, llm
from memory import tasks, verdict_jobs
from memory.models import Memory, MemoryVerdictJob, Status
from memory.verdict_jobs import MAX_ATTEMPTS, verdict_job_run, verdict_jobs_sweep
from tests.memory.test_verdicts import VerdictModel

CANTEEN = "The staff canteen closes at 3 pm."
CANTEEN_LATER = "The staff canteen stays open until 5 pm."


class VerdictJobTests(VerdictModel):
    def pair(self) -> tuple[Memory, Memory, MemoryVerdictJob]:
        """Two memories a verdict is queued for; the message is not sent (the test runs the job)."""
        with mock.patch.object(tasks.memory_settle_task, "delay"):
            old = self.remember(CANTEEN)
            new = self.remember(CANTEEN_LATER)
        return new, old, MemoryVerdictJob.objects.get(new_memory_id=new.pk, old_memory_id=old.pk)

    def test_the_job_is_part_of_the_capture_and_goes_with_it(self) -> None:
        self.model("contradiction")
        self.remember(CANTEEN)

        def capture_then_fail() -> None:
            with transaction.atomic():
                self.remember(CANTEEN_LATER)
                assert MemoryVerdictJob.objects.count() == 1
                raise RuntimeError("the capture's transaction fails")

        with mock.patch.object(tasks.memory_settle_task, "delay") as delay, pytest.raises(RuntimeError):
            capture_then_fail()
        assert not MemoryVerdictJob.objects.exists()
        delay.assert_not_called()

    def test_a_job_runs_once_and_records_its_outcome(self) -> None:
        fake = self.model("contradiction")
        _, old, job = self.pair()
        assert verdict_job_run(job.pk) == "contradiction"
        job.refresh_from_db()
        assert (job.state, job.outcome, job.attempts, job.lease_token) == ("done", "contradiction", 1, None)
        assert job.finished_at is not None
        old.refresh_from_db()
        assert (old.status, old.contradiction_losses) == (Status.DEPRECATED, 1)
        # A second message for the same job (a duplicate, a redelivery) finds it finished.
        assert verdict_job_run(job.pk) == "busy"
        assert len(fake.requests) == 1
        old.refresh_from_db()
        assert old.contradiction_losses == 1

    def test_a_job_held_by_a_live_worker_is_left_alone(self) -> None:
        self.model("contradiction")
        _, _, job = self.pair()
        MemoryVerdictJob.objects.filter(pk=job.pk).update(
            state="running", lease_expires_at=timezone.now() + dt.timedelta(minutes=5)
        )
        assert verdict_job_run(job.pk) == "busy"
        assert verdict_job_run(10**9) == "busy"  # gone

    def test_a_memory_gone_meanwhile_finishes_the_job_as_skipped(self) -> None:
        self.model("merge")
        new, _, job = self.pair()
        Memory.objects.filter(pk=new.pk).delete()
        assert verdict_job_run(job.pk) == "skipped"
        assert MemoryVerdictJob.objects.get(pk=job.pk).state == "done"

    def test_an_unreachable_model_queues_the_job_again_until_it_gives_up(self) -> None:
        self.model("contradiction")
        _, old, job = self.pair()
        with socket.socket() as closed:  # a port nothing listens on: the model is unreachable
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        self.enterContext(override_settings(LLM={**settings.LLM, "BASE_URL": f"http://127.0.0.1:{port}/v1"}))
        for attempt in range(1, MAX_ATTEMPTS):
            with pytest.raises(llm.LLMError):
                verdict_job_run(job.pk)
            job.refresh_from_db()
            assert (job.state, job.attempts, job.lease_token) == ("queued", attempt, None)
        assert verdict_job_run(job.pk) == "failed"
        job.refresh_from_db()
        assert job.state == "failed"
        assert "could not be reached" in job.error
        old.refresh_from_db()
        assert old.status == Status.DRAFT  # the memories stay as the capture left them

    def test_the_sweep_sends_lost_and_abandoned_jobs_again(self) -> None:
        an_hour_ago = timezone.now() - dt.timedelta(hours=1)
        soon = timezone.now() + dt.timedelta(minutes=5)
        states: dict[str, dict[str, Any]] = {
            "fresh": {"state": "queued"},
            "never-started": {"state": "queued", "updated_at": an_hour_ago},
            "died": {"state": "running", "lease_expires_at": an_hour_ago},
            "working": {"state": "running", "lease_expires_at": soon},
            "done": {"state": "done", "updated_at": an_hour_ago},
            "failed": {"state": "failed", "updated_at": an_hour_ago},
        }
        rows = {}
        for name, fields in states.items():
            job = MemoryVerdictJob.objects.create(
                new_memory_id=uuid.uuid4(), old_memory_id=uuid.uuid4(), similarity=0.9
            )
            MemoryVerdictJob.objects.filter(pk=job.pk).update(**fields)  # update(): auto_now stays out of it
            rows[name] = job.pk

        with mock.patch.object(tasks.memory_settle_task, "delay") as delay:
            with mock.patch.object(jobs, "queue_idle", return_value=False):
                assert verdict_jobs_sweep() == 1  # a backlog: only the dead worker's job
            delay.assert_called_once_with(rows["died"])
            delay.reset_mock()
            with mock.patch.object(jobs, "queue_idle", return_value=True):
                assert verdict_jobs_sweep() == 2
            assert sorted(call.args[0] for call in delay.call_args_list) == sorted(
                [rows["died"], rows["never-started"]]
            )

    def test_a_message_from_before_the_upgrade_is_still_settled(self) -> None:
        self.model("contradiction")
        with mock.patch.object(tasks.memory_settle_task, "delay"):
            old = self.remember(CANTEEN)
            new = self.remember(CANTEEN_LATER)
        tasks.memory_settle_task(str(new.pk), str(old.pk), 0.88)  # the old message shape
        old.refresh_from_db()
        assert old.status == Status.DEPRECATED

    def test_the_beat_runs_the_sweep(self) -> None:
        entry = settings.CELERY_BEAT_SCHEDULE["memory-verdicts-sweep"]
        assert entry["task"] == tasks.memory_verdicts_sweep_task.name
        assert entry["schedule"] <= 60
        assert dt.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT) < verdict_jobs.LEASE
