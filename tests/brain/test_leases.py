"""The lease rules of every job kind, as a property: two workers, expiry, late finish refused.

Run on a real job table (questions): whatever order claims, expiries and finishes come in,
at most one worker holds the lease, a worker writes only while it holds it, a finished job
is never claimed again, and every claim counts one attempt.
"""

from __future__ import annotations

import datetime as dt
from unittest import mock

from django.db.models import Q
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from answers.models import Question
from brain.leases import Lease, lease_claim, lease_expired, lease_extend, lease_finish, lease_holds
from grants.principals import SYSTEM
from grants.services import member_create

STEPS = st.lists(
    st.tuples(st.sampled_from(["claim", "expire", "finish", "hold"]), st.sampled_from(["a", "b"])), max_size=14
)


def _claim(pk: int) -> Lease | None:
    return lease_claim(
        Question, pk, waiting=Q(status=Question.Status.QUEUED), running=Q(status=Question.Status.RUNNING),
        take={"status": Question.Status.RUNNING}, duration=dt.timedelta(minutes=5),
    )  # fmt: skip


class LeaseRuleTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.asker = member_create(actor=SYSTEM, username="asker")

    @settings(max_examples=150, deadline=None)
    @given(STEPS)
    def test_two_workers_expiry_and_late_finish(self, steps: list[tuple[str, str]]) -> None:
        question = Question.objects.create(asker=self.asker, text="q")
        held: dict[str, Lease | None] = {"a": None, "b": None}
        holder: str | None = None  # who the model says holds the lease now
        finished = False
        claims = 0
        for action, worker in steps:
            if action == "claim":
                lease = _claim(question.pk)
                # Claimable only when not finished and nobody holds a live lease.
                assert (lease is not None) == (not finished and holder is None)
                if lease is not None:
                    claims += 1
                    assert lease.attempt == claims
                    held[worker], holder = lease, worker
            elif action == "expire":
                Question.objects.filter(pk=question.pk).update(
                    lease_expires_at=timezone.now() - dt.timedelta(seconds=1)
                )
                holder = None  # the lease is up for grabs; its old token still sits on the row
            elif action == "hold":
                lease = held[worker]
                if lease is not None:
                    row_token = Question.objects.values_list("lease_token", flat=True).get(pk=question.pk)
                    assert lease_holds(lease) == (row_token == lease.token)
            else:  # finish
                lease = held[worker]
                if lease is None:
                    continue
                row_token = Question.objects.values_list("lease_token", flat=True).get(pk=question.pk)
                done = lease_finish(lease, status=Question.Status.ANSWERED, answer=f"by {worker}")
                # A late finisher — its lease taken over by the other worker — writes nothing.
                assert done == (row_token == lease.token)
                if done:
                    finished, holder = True, None
                    assert Question.objects.get(pk=question.pk).answer == f"by {worker}"
                held[worker] = None
        row = Question.objects.get(pk=question.pk)
        assert row.attempts == claims
        assert (row.status == Question.Status.ANSWERED) == finished

    def test_of_two_simultaneous_claims_exactly_one_wins(self) -> None:
        question = Question.objects.create(asker=self.asker, text="q")
        first, second = _claim(question.pk), _claim(question.pk)
        assert first is not None
        assert second is None
        assert lease_holds(first)

    def test_expiry_is_judged_by_the_database_clock_not_the_workers(self) -> None:
        question = Question.objects.create(asker=self.asker, text="q")
        held = _claim(question.pk)
        assert held is not None
        ahead = timezone.now() + dt.timedelta(hours=1)
        # A worker whose clock runs an hour ahead: the lease is still alive, it is not taken over.
        with mock.patch("django.utils.timezone.now", return_value=ahead):
            assert _claim(question.pk) is None
            assert not Question.objects.filter(lease_expired(), pk=question.pk).exists()
            # Nor does its extension grant more than the five minutes asked, by its own clock.
            assert lease_extend(held, dt.timedelta(minutes=5))
        expires = Question.objects.values_list("lease_expires_at", flat=True).get(pk=question.pk)
        assert expires is not None
        assert expires < timezone.now() + dt.timedelta(minutes=6)
        assert lease_holds(held)
