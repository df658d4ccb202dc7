"""What an audit of the memory layer found, each held shut: a model verdict never does what its
actor could not, never loses text, weight or links; a flag always fits; what a person forgets,
un-shares or leaves with does not live on in insights; dates and layers refused by name."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.test import TestCase

from grants.principals import SYSTEM
from grants.services import member_create
from memory.classify import MemoryInvalid
from memory.models import CalendarSubscription, Memory, MemoryInsight, MemoryLink, Status
from memory.services import (
    CONTRADICTION_CANDIDATE_TAG,
    _with_room,
    apply_contradiction,
    apply_duplicate_verdict,
    memory_forget,
    memory_link,
    memory_remember,
    memory_share,
    personal_layer_delete,
)
from memory.tokens import api_token_issue


class MemoryEdgeTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com")
        cls.bob = member_create(actor=SYSTEM, username="bob", email="bob@example.com")

    def remember(self, who: object, content: str, **kwargs: object) -> Memory:
        return memory_remember(actor=who, content=content, block_duplicates=False, **kwargs).memory  # type: ignore[arg-type]

    def test_a_contradiction_verdict_never_deprecates_a_colleagues_shared_memory(self) -> None:
        old = self.remember(self.alice, "The staff canteen closes at 3 pm.", workspace="company")
        new = self.remember(self.bob, "The staff canteen now closes at 5 pm in winter.", workspace="company")
        settled = apply_contradiction(actor=self.bob, new=new, old=old)
        assert Memory.objects.get(pk=old.pk).status != Status.DEPRECATED
        assert CONTRADICTION_CANDIDATE_TAG in settled.tags  # for a person to settle

    def test_a_verdict_that_changes_a_colleagues_memory_for_an_administrator_is_audited(self) -> None:
        """Directly, an administrator's status change of a colleague's memory is audited; through
        a model's verdict on their own capture it was not."""
        from grants.models import AuditEvent

        dana = member_create(actor=SYSTEM, username="dana", role="admin")
        old = self.remember(self.alice, "The staging database is db-2.", workspace="company")
        new = self.remember(dana, "The staging database moved to db-3.", workspace="company")
        apply_contradiction(actor=dana, new=new, old=old)
        assert Memory.objects.get(pk=old.pk).status == Status.DEPRECATED
        event = AuditEvent.objects.get(action="memory.admin_status", target=str(old.pk))
        assert (event.actor_label, event.metadata["author"], event.metadata["verdict"]) == (
            "dana",
            "alice",
            "contradiction",
        )
        own = self.remember(dana, "Dana's own note.", workspace="company")
        apply_contradiction(actor=dana, new=self.remember(dana, "Dana's newer note.", workspace="company"), old=own)
        assert not AuditEvent.objects.filter(target=str(own.pk)).exists()

    def test_an_import_cannot_make_a_contradicting_memory_canonical(self) -> None:
        """A direct capture tagged canonical that contradicts a canonical memory is held as a
        draft; the same line through the JSON-lines import came out canonical (two canonical
        memories saying opposite things)."""
        import json

        from memory.tokens import api_token_issue

        self.remember(self.alice, "The staging database is db-2.", workspace="company", tags=["status:canonical"])
        _, token = api_token_issue(actor=self.alice, name="import")
        line = json.dumps({"content": "The staging database is db-3.", "status": "canonical", "workspace": "company"})
        answer = self.client.post("/api/memory/import", data=line, content_type="application/x-ndjson",
                                  HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert answer.status_code == 200, answer.content
        imported = Memory.objects.get(content="The staging database is db-3.")
        assert imported.status == Status.DRAFT

    def test_merge_and_replace_keep_both_rather_than_lose_text_weight_or_links(self) -> None:
        long_old = self.remember(self.alice, "Alarm procedure. " + "x" * 19_400)
        longer = self.remember(self.alice, "Alarm procedure. " + "x" * 19_400 + " IMPORTANT: the code is kept by Dana.")
        assert apply_duplicate_verdict(actor=self.alice, new=longer, old=long_old, verdict="merge").pk == longer.pk
        assert Memory.objects.filter(pk__in=[long_old.pk, longer.pk]).count() == 2  # nothing cut, nothing gone
        old = self.remember(self.alice, "The office is on floor 3.")
        weighty = self.remember(self.alice, "The office is on floor 4.", tags=["status:canonical"], importance=5)
        assert apply_duplicate_verdict(actor=self.alice, new=weighty, old=old, verdict="replace").pk == weighty.pk
        assert Memory.objects.get(pk=weighty.pk).status == Status.CANONICAL
        # An ordinary replace carries the new row's links to the row that goes on.
        old = self.remember(self.alice, "Standup is at 9:30.")
        new = self.remember(self.alice, "Standup is at 9:45.")
        other = self.remember(self.alice, "Team rituals.")
        memory_link(actor=self.alice, from_id=other.pk, to_id=new.pk, type="relates_to")
        kept = apply_duplicate_verdict(actor=self.alice, new=new, old=old, verdict="replace")
        assert kept.pk == old.pk
        assert MemoryLink.objects.filter(from_memory=other, to_memory=old).exists()

    def test_a_flag_always_fits_beside_64_tags(self) -> None:
        tags = [f"t{number}" for number in range(64)]
        kept = _with_room(tags, "duplicate-candidate")
        assert len(kept) == 64
        assert kept[-1] == "duplicate-candidate"

    def test_what_is_forgotten_unshared_or_left_with_leaves_the_insights(self) -> None:
        shared = self.remember(self.alice, "Salary band for Dana is 140k, oops wrong layer.", workspace="company")
        mine = self.remember(self.alice, "My therapist appointment is every Tuesday at 4.")
        week = dt.date(2026, 11, 23)
        MemoryInsight.objects.create(member=None, week_start=week, summary={"new": [{"id": str(shared.pk)}]},
                                     text="Salary band for Dana is 140k")  # fmt: skip
        MemoryInsight.objects.create(member=self.alice, week_start=week, summary={"new": [{"id": str(mine.pk)}]},
                                     text="My therapist appointment")  # fmt: skip
        memory_share(actor=self.alice, memory_id=shared.pk, workspace="personal")
        assert not MemoryInsight.objects.filter(member__isnull=True).exists()
        CalendarSubscription.objects.create(member=self.alice, name="Private", url="https://cal.example/x.ics")
        personal_layer_delete(member=self.alice)
        assert not MemoryInsight.objects.filter(member=self.alice).exists()
        assert not CalendarSubscription.objects.filter(member=self.alice).exists()
        gone = self.remember(self.bob, "Layoffs next quarter.", workspace="company")
        MemoryInsight.objects.create(member=None, week_start=week, summary={"new": [{"id": str(gone.pk)}]},
                                     text="Layoffs next quarter")  # fmt: skip
        memory_forget(actor=self.bob, memory_id=gone.pk)
        assert not MemoryInsight.objects.filter(member__isnull=True).exists()

    def test_a_former_members_shared_memory_cannot_be_unshared_into_nowhere(self) -> None:
        charlie = member_create(actor=SYSTEM, username="charlie", role="admin")
        shared = self.remember(self.alice, "Vendor contract renewal is due in March.", workspace="company")
        type(self.alice).objects.filter(pk=self.alice.pk).update(
            is_active=False, offboarded_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
        )
        with pytest.raises(MemoryInvalid, match="its author has left"):
            memory_share(actor=charlie, memory_id=shared.pk, workspace="personal")

    def test_an_impossible_date_on_recall_is_a_named_400(self) -> None:
        token = api_token_issue(actor=self.alice, name="cli")[1]
        for value in ("2024-13-45T00:00:00", "2024-02-30"):
            answer = self.client.get(
                "/api/memory/recall", {"q": "x", "after": value}, HTTP_AUTHORIZATION=f"Bearer {token}"
            )
            assert answer.status_code == 400, (value, answer.status_code)
            assert "after must be an ISO date" in json.dumps(answer.json())

    def test_linking_to_an_id_that_is_no_memory_you_see_is_said_on_the_memorys_page(self) -> None:
        """A bare "Not found" page replaced the memory's page (and what the page says)."""
        mine = self.remember(self.alice, "We ship on Thursdays.")
        bobs = self.remember(self.bob, "Bob's private note about Thursdays.")
        self.client.force_login(self.alice.user)
        for other in ("not-a-uuid", "00000000-0000-0000-0000-000000000000", str(bobs.pk)):
            answer = self.client.post(f"/memory/{mine.pk}/link", {"to_id": other, "type": "relates_to"}, follow=True)
            assert answer.redirect_chain[-1][0] == f"/memory/{mine.pk}/", other
            assert "Not linked: no memory you can see has that id." in answer.content.decode(), other
        # A word that is no action is a page that does not exist, by any method.
        assert self.client.get(f"/memory/{mine.pk}/bogus").status_code == 404
        assert self.client.post(f"/memory/{mine.pk}/bogus").status_code == 404

    def test_an_unknown_layer_is_a_400_and_an_admins_unshare_lands_on_the_dashboard(self) -> None:
        token = api_token_issue(actor=self.alice, name="cli")[1]
        answer = self.client.get("/api/memory/count", {"workspace": "bogus"}, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert answer.status_code == 400
        charlie = member_create(actor=SYSTEM, username="charlie", role="admin")
        shared = self.remember(self.alice, "Vendor contract renewal is due in March.", workspace="company")
        self.client.force_login(charlie.user)
        moved = self.client.post(f"/memory/{shared.pk}/share", {"workspace": "personal"}, follow=True)
        assert moved.redirect_chain[-1][0] == "/memory/"
        assert "Moved back to its author&#x27;s personal memories." in moved.content.decode()
        # An administrator's change of a colleague's memory is in the audit log, by name.
        from grants.models import AuditEvent

        event = AuditEvent.objects.get(action="memory.admin_share", target=str(shared.pk))
        assert event.actor_label == "charlie"
        assert not AuditEvent.objects.filter(action__startswith="memory.admin_", actor_label="alice").exists()
