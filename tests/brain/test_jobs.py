"""Queueing rules: a broker outage never fails a committed write; sweeps re-send only what is lost."""

from __future__ import annotations

import datetime as dt
import logging
from unittest import mock

from django.test import TestCase
from django.utils import timezone
from kombu.exceptions import OperationalError

from answers import tasks as answer_tasks
from answers.models import Question
from answers.services import question_ask, questions_sweep
from brain.celery import app
from brain.jobs import enqueue_on_commit, queue_idle
from grants.principals import SYSTEM
from grants.services import member_create


def purge_default_queue() -> None:
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(app.conf.task_default_queue)  # type: ignore[attr-defined]


class QueueTests(TestCase):
    def setUp(self) -> None:
        purge_default_queue()
        self.addCleanup(purge_default_queue)

    def test_queue_idle_reads_the_real_broker(self) -> None:
        assert queue_idle() is True
        app.send_task("brain.tests.nothing", args=[1])
        assert queue_idle() is False

    def test_an_unreachable_broker_reads_as_not_idle(self) -> None:
        with mock.patch.object(app, "connection_for_read", side_effect=OperationalError("down")):
            assert queue_idle() is False

    def test_a_broker_outage_at_commit_is_logged_not_raised(self) -> None:
        task = mock.Mock()
        task.name = "answers.run"
        task.delay.side_effect = OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        with self.assertLogs("brain.jobs", logging.WARNING) as logs, self.captureOnCommitCallbacks(execute=True):
            enqueue_on_commit(task, 42)
        task.delay.assert_called_once_with(42)
        assert "its sweep will send it again" in logs.output[0]
        assert "6379" not in logs.output[0]  # the broker's address stays out of the log


class SweepRuleTests(TestCase):
    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice")

    def waiting_question(self) -> Question:
        question = question_ask(actor=self.alice, text="What plans are there?", enqueue=False)
        Question.objects.filter(pk=question.pk).update(created_at=timezone.now() - dt.timedelta(minutes=5))
        return question

    def test_a_waiting_job_is_re_sent_only_when_the_queue_is_idle(self) -> None:
        question = self.waiting_question()
        with mock.patch.object(answer_tasks.question_run_task, "delay") as delay:
            with mock.patch("brain.jobs.queue_idle", return_value=False):
                assert questions_sweep() == 0  # its message may still be ahead in the queue
            with mock.patch("brain.jobs.queue_idle", return_value=True):
                assert questions_sweep() == 1  # nothing queued: the message was lost
        delay.assert_called_once_with(question.pk)

    def test_a_job_whose_worker_died_is_re_sent_whatever_the_queue_holds(self) -> None:
        question = self.waiting_question()
        Question.objects.filter(pk=question.pk).update(
            status=Question.Status.RUNNING, lease_expires_at=timezone.now() - dt.timedelta(seconds=1)
        )
        with (
            mock.patch.object(answer_tasks.question_run_task, "delay") as delay,
            mock.patch("brain.jobs.queue_idle", return_value=False),
        ):
            assert questions_sweep() == 1
        delay.assert_called_once_with(question.pk)


def test_a_task_is_found_by_name_in_a_process_that_never_imported_its_module() -> None:
    """A web process queues by name (``brain.jobs``) without importing any tasks module."""
    import subprocess
    import sys

    code = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'brain.settings'); django.setup()\n"
        "import sys; assert 'answers.tasks' not in sys.modules\n"
        "from brain.jobs import task_named\n"
        "print(task_named('answers.run').name, task_named('memory.settle').name)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["answers.run", "memory.settle"]
