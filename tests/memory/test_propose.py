"""Memory → corpus: a shared memory proposed as a page reaches the corpus only through review."""

from __future__ import annotations

import pytest

from builds.models import Build, BuildChange
from builds.services import PromotionBlocked, build_promote, build_submit
from corpus.models import Page, Source
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.classify import MemoryInvalid
from memory.models import Memory
from memory.propose import memory_propose_page
from memory.services import memory_remember
from tests.base import BrainTestCase, publish

ONBOARDING = "topics/people/onboarding.md"


class ProposeTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        grant_issue(actor=SYSTEM, member=cls.alice, path="topics/people/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="suggest")
        cls.erin = member_create(actor=SYSTEM, username="erin", password="pw-erin-12345")
        grant_issue(actor=SYSTEM, member=cls.erin, path="topics/people/", permission="approve")
        grant_issue(actor=SYSTEM, member=cls.erin, path="captures/", permission="approve")

    def shared(self, text: str) -> Memory:
        return memory_remember(actor=self.bob, content=text, workspace="company").memory

    def test_a_shared_memory_becomes_a_draft_page_and_goes_live_only_when_approved(self) -> None:
        memory = self.shared("New starters get their laptop from IT on the first morning, before 10am.")
        build = memory_propose_page(actor=self.alice, memory_id=memory.pk, path="topics/people/laptops.md",
                                    title="Laptops for new starters")  # fmt: skip
        assert build.status == Build.Status.OPEN
        change = BuildChange.objects.select_related("revision").get(build=build)
        fm = change.revision.frontmatter  # type: ignore[union-attr]
        [cited] = fm["sources"]
        key = cited.removeprefix("capture:")
        source = Source.objects.get(key=key)
        assert key.startswith("memory/")
        assert source.text == memory.content
        assert not source.is_live
        assert (fm["owner"], fm["status"], fm["title"]) == ("alice", "draft", "Laptops for new starters")
        assert "first morning, before 10am" in change.revision.body  # type: ignore[union-attr]
        assert not Page.objects.filter(path="topics/people/laptops.md").exists()  # nothing live yet
        build_submit(actor=self.alice, build=build)
        build_promote(actor=self.erin, build=build, note="Reviewed")
        page = Page.objects.select_related("current_revision").get(path="topics/people/laptops.md")
        assert page.current_revision.frontmatter["sources"] == [cited]  # type: ignore[union-attr]
        assert Source.objects.get(key=key).is_live

    def test_a_memory_taken_back_cancels_its_open_proposals_but_not_a_promoted_one(self) -> None:
        """Bob un-shares (or forgets) what Alice proposed: its words must not go live after."""
        from grants.models import AuditEvent
        from memory.services import memory_forget, memory_share

        unshared = self.shared("Our pager rota for the Zebra incident is Bob then Carol, never on Fridays.")
        forgotten = self.shared("The Zebra post-mortem is due on the 14th, written by Carol.")
        promoted = self.shared("The Zebra incident channel is #inc-zebra.")
        submitted = memory_propose_page(actor=self.alice, memory_id=unshared.pk, path="topics/people/pager.md")
        build_submit(actor=self.alice, build=submitted)
        opened = memory_propose_page(actor=self.alice, memory_id=forgotten.pk, path="topics/people/postmortem.md")
        done = memory_propose_page(actor=self.alice, memory_id=promoted.pk, path="topics/people/channel.md")
        build_submit(actor=self.alice, build=done)
        build_promote(actor=self.erin, build=done, note="ok")

        memory_share(actor=self.bob, memory_id=unshared.pk, workspace="personal")
        memory_forget(actor=self.bob, memory_id=forgotten.pk)
        memory_share(actor=self.bob, memory_id=promoted.pk, workspace="personal")
        statuses = {build.pk: Build.objects.get(pk=build.pk).status for build in (submitted, opened, done)}
        assert statuses == {submitted.pk: Build.Status.CANCELLED, opened.pk: Build.Status.CANCELLED,
                            done.pk: Build.Status.PROMOTED}  # fmt: skip
        with pytest.raises(PromotionBlocked, match=r"not awaiting review"):
            build_promote(actor=self.erin, build=submitted, note="ok")
        assert not Page.objects.filter(path__in=["topics/people/pager.md", "topics/people/postmortem.md"]).exists()
        reasons = AuditEvent.objects.filter(action="build.cancel").values_list("metadata__reason", flat=True)
        assert sorted(reasons) == ["the memory it proposed was forgotten", "the memory it proposed was un-shared"]

    def test_a_section_added_to_an_existing_page_cites_the_memory(self) -> None:
        publish(
            ONBOARDING, title="Onboarding", sources=None, body="# Onboarding\n\n## Day one\n\nBadge at reception.\n"
        )
        memory = self.shared("Buddies are assigned by the team lead in the week before the start date.")
        build = memory_propose_page(actor=self.alice, memory_id=memory.pk, path=ONBOARDING, title="Buddies",
                                    add_to_existing=True)  # fmt: skip
        revision = BuildChange.objects.select_related("revision").get(build=build).revision
        assert revision is not None
        assert revision.body.startswith("# Onboarding\n\n## Day one\n\nBadge at reception.")
        assert "## Buddies\n\nBuddies are assigned" in revision.body
        assert revision.frontmatter["sources"][-1].startswith("capture:memory/")

    def test_refusals_leave_no_build_behind(self) -> None:
        personal = memory_remember(actor=self.alice, content="My own note about onboarding.").memory
        with pytest.raises(MemoryInvalid, match="share it with the team first"):
            memory_propose_page(actor=self.alice, memory_id=personal.pk, path="topics/people/a.md")
        with pytest.raises(Memory.DoesNotExist):  # Bob's personal memory does not exist for Alice
            memory_propose_page(actor=self.alice, memory_id=memory_remember(actor=self.bob, content="Bob's.").memory.pk,
                                path="topics/people/a.md")  # fmt: skip
        shared = self.shared("Payroll questions go to the people team.")
        with pytest.raises(Page.DoesNotExist):  # no page there that Alice can read
            memory_propose_page(actor=self.alice, memory_id=shared.pk, path="topics/people/none.md",
                                add_to_existing=True)  # fmt: skip
        with pytest.raises(Exception, match="suggest"):  # no grant on engineering/
            memory_propose_page(actor=self.alice, memory_id=shared.pk, path="engineering/payroll.md")
        assert not Build.objects.exists()
        assert not Source.objects.filter(key__startswith="memory/").exists()

    def test_from_the_memory_page(self) -> None:
        memory = self.shared("The fire drill is on the first Tuesday of each quarter.")
        self.client.force_login(self.alice.user)
        page = self.client.get(f"/memory/{memory.pk}/").content.decode()
        assert "Propose as a corpus page" in page
        bad = self.client.post(
            f"/memory/{memory.pk}/propose", {"path": "../etc/passwd", "title": "Drills", "mode": "append"}
        )
        assert bad.status_code == 400
        shown = bad.content.decode()
        assert "Not proposed:" in shown
        # The form again, open, with what was typed (a redirect emptied it).
        assert 'value="../etc/passwd"' in shown
        assert 'value="Drills"' in shown
        assert 'value="append" checked' in shown
        # A NUL in a multipart form reaches the view (the middleware reads url-encoded forms only):
        # both modes looked the path up before refusing it, a database error (500).
        for mode in ("new", "append"):
            nul = self.client.post(f"/memory/{memory.pk}/propose", {"path": "topics/a\x00b.md", "mode": mode},
                                   follow=True)  # fmt: skip
            assert nul.status_code == 400, mode
            assert "Not proposed:" in nul.content.decode()
        assert not Build.objects.exists()
        form = {"path": "topics/people/fire-drills.md", "title": "Fire drills", "mode": "new"}
        answer = self.client.post(f"/memory/{memory.pk}/propose", form)
        build = Build.objects.get()
        assert answer["Location"] == f"/builds/{build.public_id}/"
        # ... and from the build's page it goes to review: there was no way but withdrawing.
        opened = self.client.get(answer["Location"]).content.decode()
        assert "Submit for review" in opened
        sent = self.client.post(f"/builds/{build.public_id}/submit", follow=True).content.decode()
        assert "Submitted for review" in sent
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        self.client.force_login(self.bob.user)  # not the requester
        assert self.client.post(f"/builds/{build.public_id}/submit").status_code in (403, 404)
        self.client.force_login(self.alice.user)
        missing = self.client.post(f"/memory/{memory.pk}/propose",
                                   {"path": "topics/people/none.md", "mode": "append"})  # fmt: skip
        assert "There is no page at topics/people/none.md that you can read." in missing.content.decode()
