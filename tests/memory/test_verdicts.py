"""Model verdicts on near-duplicates and contradictions, with a local fake model server."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest

from brain import llm
from memory import tasks
from memory.models import LinkType, Memory, MemoryLink, MemoryVerdictJob, Status
from memory.services import memory_remember, memory_share
from memory.verdict_jobs import verdict_job_run
from memory.verdicts import memory_settle, parse_verdict
from tests.fakes import FakeModel
from tests.memory.test_memory import MemoryTestCase

OFFICE = "Our office in Tokyo opens at 9."
OFFICE_AGAIN = "The Tokyo office opens at nine."


def answering(verdict: str) -> Any:
    def script(body: dict[str, Any], count: int) -> dict[str, Any]:
        return {"role": "assistant", "content": json.dumps({"verdict": verdict, "reason": "test"})}

    return script


class VerdictModel(MemoryTestCase):
    """A memory test case whose model (a local fake server) answers every question with one verdict."""

    def model(self, verdict: str) -> FakeModel:
        fake = FakeModel(answering(verdict))
        self.addCleanup(fake.close)
        settings = fake.settings()
        settings.enable()
        self.addCleanup(settings.disable)
        return fake


class VerdictTests(VerdictModel):
    def flagged_pair(self, who: Any = None) -> tuple[Memory, Memory, float]:
        old = self.remember(OFFICE, who=who)
        capture = memory_remember(actor=who or self.alice, content=OFFICE_AGAIN)
        assert capture.outcome == "flagged"
        assert capture.similarity is not None
        return capture.memory, old, capture.similarity

    def test_without_a_model_a_near_duplicate_is_only_flagged_and_nothing_is_queued(self) -> None:
        with mock.patch.object(tasks.memory_settle_task, "delay") as delay, self.captureOnCommitCallbacks(execute=True):
            new, old, similarity = self.flagged_pair()
        delay.assert_not_called()
        assert not MemoryVerdictJob.objects.exists()
        assert memory_settle(new_id=new.pk, old_id=old.pk, similarity=similarity) == "skipped"
        new.refresh_from_db()
        assert "duplicate-candidate" in new.tags

    def test_with_a_model_the_capture_queues_ids_only_after_commit(self) -> None:
        self.model("keep_both")
        with mock.patch.object(tasks.memory_settle_task, "delay") as delay:
            with self.captureOnCommitCallbacks(execute=False) as callbacks:
                new, old, similarity = self.flagged_pair()
            delay.assert_not_called()  # not before the capture commits
            for callback in callbacks:
                callback()
        job = MemoryVerdictJob.objects.get(new_memory_id=new.pk, old_memory_id=old.pk)
        assert job.similarity == similarity
        delay.assert_called_once_with(job.pk)  # the job's row holds the rest (memory.verdict_jobs)

    def test_merge_appends_the_new_text_to_the_old_memory_and_forgets_the_new_row(self) -> None:
        fake = self.model("merge")
        new, old, similarity = self.flagged_pair()
        assert memory_settle(new_id=str(new.pk), old_id=str(old.pk), similarity=similarity) == "merge"
        old.refresh_from_db()
        assert OFFICE in old.content
        assert OFFICE_AGAIN in old.content
        assert not Memory.objects.filter(pk=new.pk).exists()
        sent = fake.requests[0]["messages"]
        assert "merge" in sent[0]["content"]
        assert OFFICE in sent[1]["content"]
        assert OFFICE_AGAIN in sent[1]["content"]

    def test_keep_both_clears_the_flag(self) -> None:
        self.model("keep_both")
        new, old, similarity = self.flagged_pair()
        assert memory_settle(new_id=new.pk, old_id=old.pk, similarity=similarity) == "keep_both"
        new.refresh_from_db()
        assert "duplicate-candidate" not in new.tags
        assert Memory.objects.count() == 2

    def test_a_contradiction_deprecates_the_old_memory_with_a_supersedes_link(self) -> None:
        self.model("contradiction")
        # A pair the model-free check cannot read (a paraphrased predicate): the model settles it.
        old = self.remember("The staff canteen closes at 3 pm.")
        new = self.remember("Lunch in the staff canteen is served until 5 pm.")
        assert old.status == Status.DRAFT  # untouched by the capture itself
        assert memory_settle(new_id=new.pk, old_id=old.pk, similarity=0.8) == "contradiction"
        old.refresh_from_db()
        assert old.status == Status.DEPRECATED
        assert MemoryLink.objects.filter(from_memory=new, to_memory=old, type=LinkType.SUPERSEDES).exists()

    def test_a_canonical_memory_wins_a_contradiction(self) -> None:
        self.model("contradiction")
        old = self.remember("The staff canteen closes at 3 pm.", tags=["status:canonical"])
        new = self.remember("The staff canteen now closes at 5 pm.")
        memory_settle(new_id=new.pk, old_id=old.pk, similarity=0.8)
        old.refresh_from_db()
        new.refresh_from_db()
        assert old.status == Status.CANONICAL
        assert new.status == Status.DRAFT

    def test_a_merely_related_pair_or_another_authors_memory_is_never_rewritten(self) -> None:
        fake = self.model("replace")
        old = self.remember("The staff canteen closes at 3 pm.")
        new = self.remember("The staff canteen serves soup on Fridays.")
        assert memory_settle(new_id=new.pk, old_id=old.pk, similarity=0.8) == "no-verdict"
        prompt = fake.requests[-1]["messages"][0]["content"]
        assert "replace" not in prompt
        assert "merge" not in prompt

        # Bob's shared memory next to Alice's shared one: hers is not his to rewrite.
        shared, _ = memory_share(actor=self.alice, memory_id=old.pk, workspace="company")
        soup = "Friday soup at the staff canteen is vegetarian."
        bobs = memory_remember(actor=self.bob, content=soup, workspace="company")
        assert memory_settle(new_id=bobs.memory.pk, old_id=shared.pk, similarity=0.9) == "no-verdict"
        shared.refresh_from_db()
        assert shared.content == "The staff canteen closes at 3 pm."

    def test_an_unreadable_reply_changes_nothing(self) -> None:
        assert parse_verdict("I think they are duplicates.", ("merge",)) is None
        assert parse_verdict('{"verdict": "delete_everything"}', ("merge", "keep_both")) is None
        assert parse_verdict('Sure: {"verdict": "merge", "reason": "x"}', ("merge",)) == "merge"

    def test_an_unreachable_model_raises_for_the_task_to_retry_and_changes_nothing(self) -> None:
        fake = self.model("merge")
        new, old, similarity = self.flagged_pair()
        fake.close()
        with pytest.raises(llm.LLMError):
            memory_settle(new_id=new.pk, old_id=old.pk, similarity=similarity)
        assert Memory.objects.filter(pk=new.pk).exists()
        old.refresh_from_db()
        assert old.content == OFFICE

    def test_a_memory_gone_before_the_verdict_is_skipped(self) -> None:
        self.model("merge")
        new, old, similarity = self.flagged_pair()
        Memory.objects.filter(pk=old.pk).delete()
        assert memory_settle(new_id=new.pk, old_id=old.pk, similarity=similarity) == "skipped"

    def test_a_pair_whose_memories_both_went_private_is_skipped_unread(self) -> None:
        """Queued while both were shared; by the time the job ran each author had taken theirs
        back. Two personal layers are no layer: the model must not read the colleague's text."""
        fake = self.model("contradiction")
        with mock.patch.object(tasks.memory_settle_task, "delay"):
            old = memory_remember(actor=self.alice, content="The staff canteen closes at 3 pm.", workspace="company")
            new = memory_remember(actor=self.bob, content="The canteen stays open until 5 pm.", workspace="company")
        job = MemoryVerdictJob.objects.get(new_memory_id=new.memory.pk, old_memory_id=old.memory.pk)
        memory_share(actor=self.alice, memory_id=old.memory.pk, workspace="personal")
        memory_share(actor=self.bob, memory_id=new.memory.pk, workspace="personal")
        assert verdict_job_run(job.pk) == "skipped"
        assert fake.requests == []
        assert "contradiction-candidate" not in Memory.objects.get(pk=new.memory.pk).tags
