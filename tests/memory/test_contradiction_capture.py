"""Contradictions without a model: the capture pipeline's deterministic check on its nearest neighbours."""

from __future__ import annotations

import json

from django.test import TestCase, override_settings

from grants.principals import SYSTEM
from grants.services import member_create
from memory.models import LinkType, Memory, MemoryEvent, MemoryLink, Status
from memory.services import CONTRADICTION_CANDIDATE_TAG, CONTRADICTION_TAG, memory_remember
from memory.tokens import api_token_issue

NO_MODEL = {"BASE_URL": "", "API_KEY": "", "MODEL": "", "TIMEOUT": 5, "MAX_STEPS": 4, "MAX_TOKENS": 4000}


@override_settings(LLM=NO_MODEL)
class ContradictionCaptureTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")

    def test_a_write_contradicting_a_canonical_memory_stays_a_draft_even_when_canonical_was_asked(self) -> None:
        canon = memory_remember(actor=self.alice, content="We ship on Thursdays.", workspace="company",
                                tags=["status:canonical"]).memory  # fmt: skip
        token = api_token_issue(actor=self.bob, name="cli")[1]
        answer = self.client.post(
            "/api/memory/capture",
            data=json.dumps({"content": "We ship on Fridays.", "workspace": "company", "tags": ["status:canonical"]}),
            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
        )  # fmt: skip
        assert answer.status_code == 201
        body = answer.json()
        assert body["memory"]["status"] == "draft"
        assert body["contradiction"] == {"id": str(canon.pk), "kind": "date", "outcome": "held",
                                         "reason": body["contradiction"]["reason"]}  # fmt: skip
        assert "Fridays" in body["contradiction"]["reason"]
        assert "Thursdays" in body["contradiction"]["reason"]
        canon.refresh_from_db()
        assert (canon.status, canon.contradiction_wins) == (Status.CANONICAL, 1)
        new = Memory.objects.get(pk=body["memory"]["id"])
        assert MemoryLink.objects.filter(from_memory=new, to_memory=canon, type=LinkType.RELATES_TO).exists()
        event = MemoryEvent.objects.get(memory_id=new.pk, action=MemoryEvent.Action.STATUS_CHANGED)
        assert event.metadata["reason"] == "contradicts protected"

    def test_the_authors_own_older_memory_is_superseded(self) -> None:
        old = memory_remember(actor=self.alice, content="The staging database is db-2.").memory
        capture = memory_remember(actor=self.alice, content="The staging database is db-3.")
        assert capture.contradiction_outcome == "superseded"
        old.refresh_from_db()
        assert old.status == Status.DEPRECATED
        assert CONTRADICTION_TAG in capture.memory.tags
        assert MemoryLink.objects.filter(from_memory=capture.memory, to_memory=old, type=LinkType.SUPERSEDES).exists()

    def test_someone_elses_memory_is_never_changed_by_a_guess(self) -> None:
        theirs = memory_remember(actor=self.alice, content="Expense reports are due on the 5th of each month.",
                                 workspace="company").memory  # fmt: skip
        capture = memory_remember(actor=self.bob, content="Expense reports are due on the 10th of each month.",
                                  workspace="company")  # fmt: skip
        assert capture.contradiction_outcome == "flagged"
        assert CONTRADICTION_CANDIDATE_TAG in capture.memory.tags
        theirs.refresh_from_db()
        assert theirs.status == Status.DRAFT

    def test_an_elaboration_is_not_a_contradiction(self) -> None:
        memory_remember(actor=self.alice, content="We ship on Thursdays.", tags=["status:canonical"])
        capture = memory_remember(actor=self.alice, content="We ship on Thursdays, after the 2pm release review.",
                                  tags=["status:canonical"])  # fmt: skip
        assert capture.contradiction is None
        assert capture.memory.status == Status.CANONICAL

    def test_the_dashboard_says_what_happened(self) -> None:
        memory_remember(actor=self.alice, content="Standup is at 9:30.", tags=["status:canonical"])
        self.client.force_login(self.alice.user)
        answer = self.client.post("/memory/", {"content": "Standup is at 10:00."}, follow=True)
        assert "It contradicts another memory" in answer.content.decode()
        assert "kept as a draft" in answer.content.decode()
