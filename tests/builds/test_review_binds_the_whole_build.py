"""An approval covers the whole build, and only someone who may approve every part of it.

Reached by a reviewer of the write path: a figure value held for a page the build stopped
writing went live on a page the approver could not read; the author of a build handed on at
a suspension approved their own drafts; a figure's capture went unchecked; the owner rule's
fall-back held for writes but not for deletes and moves.
"""

from __future__ import annotations

import datetime as dt

import pytest

from accounts.services import member_reactivate, member_suspend
from builds.models import Build
from builds.selectors import build_promotion_blockers
from builds.services import (
    PromotionBlocked,
    build_delete_page,
    build_move_page,
    build_open,
    build_promote,
    build_record_figure,
    build_submit,
    build_write_page,
)
from corpus.models import Figure
from grants.models import Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import BrainTestCase, capture, page_markdown, publish

X, P = "topics/a/x.md", "topics/b/p.md"
PRICES = "topics/pricing/price-list.md"
EDITED = page_markdown(title="Price list", body="# Price list\n\nnew\n")


def fresh(build: Build) -> Build:
    return Build.objects.get(pk=build.pk)


class HeldFigureValueTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.req = member_create(actor=SYSTEM, username="req")
        cls.vic = member_create(actor=SYSTEM, username="vic")
        grant_issue(actor=SYSTEM, member=cls.req, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.vic, path="topics/a/", permission="approve")  # nothing on topics/b/

    def held_for_a_page_no_longer_written(self) -> Build:
        publish(X, title="X", body="# X\n\nold\n")
        build = build_open(actor=self.req, title="an edit of X")
        build_move_page(build=build, path=X, new_path=P)
        build_record_figure(build=build, page_path=P, key="revenue", value="999", as_of=dt.date(2026, 1, 1))
        build_write_page(
            build=build, path=X, markdown=page_markdown(title="X", body="# X\n\nnew\n")
        )  # the move is gone
        return build_submit(actor=self.req, build=build)

    def test_a_value_for_a_page_the_build_stopped_writing_blocks_and_never_lands(self) -> None:
        build = self.held_for_a_page_no_longer_written()
        publish(P, title="P", body="# P\n\nsomeone else's page\n")  # live by other means
        blockers = build_promotion_blockers(build=fresh(build), approver=self.vic)
        assert "a figure value this build holds is for a page it no longer writes; record it again" in blockers
        assert not any("revenue" in reason or P in reason for reason in blockers)  # neither named
        with pytest.raises(PromotionBlocked):
            build_promote(actor=self.vic, build=fresh(build))
        assert not Figure.objects.filter(page__path=P, key="revenue").exists()

    def test_the_review_page_says_why_approving_did_nothing(self) -> None:
        build = self.held_for_a_page_no_longer_written()
        self.client.force_login(self.vic.user)
        page = self.client.post(f"/builds/{build.public_id}/approve", {"note": "ok"}, follow=True).content.decode()
        assert "no longer writes" in page
        assert fresh(build).status == Build.Status.AWAITING_REVIEW


class FigureCitationTests(BrainTestCase):
    def test_a_figure_citing_a_capture_the_approver_cannot_read_is_blocked(self) -> None:
        req, vic = member_create(actor=SYSTEM, username="req"), member_create(actor=SYSTEM, username="vic")
        grant_issue(actor=SYSTEM, member=req, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=req, path="captures/hr/", permission="read")
        grant_issue(actor=SYSTEM, member=vic, path="topics/", permission="approve")
        publish("topics/f.md", title="F")
        capture("hr/salaries", title="Salaries")
        build = build_open(actor=req, title="figure")
        build_record_figure(build=build, page_path="topics/f.md", key="payroll", value="12",
                            as_of=dt.date(2026, 1, 1), source_key="hr/salaries")  # fmt: skip
        build_submit(actor=req, build=build)
        blockers = build_promotion_blockers(build=fresh(build), approver=vic)
        assert blockers == ["a figure value cites a capture you cannot read; someone who can must approve it"]
        grant_issue(actor=SYSTEM, member=vic, path="captures/hr/", permission="read")
        assert build_promotion_blockers(build=fresh(build), approver=vic) == []


class HandOverTests(BrainTestCase):
    @staticmethod
    def submitted_edit(author: Member) -> Build:
        """A build of ``author``'s edit of a live page, submitted for review."""
        publish(PRICES, title="Price list", body="# Price list\n\nold\n")
        build = build_open(actor=author, title=f"{author.username}'s edit")
        build_write_page(
            build=build, path=PRICES, markdown=page_markdown(title="Price list", body="# Price list\n\nnew\n")
        )
        return build_submit(actor=author, build=build)

    def test_the_author_of_a_build_handed_on_cannot_approve_their_drafts(self) -> None:
        dana = member_create(actor=SYSTEM, username="dana")
        grant_issue(actor=SYSTEM, member=dana, path="topics/", permission="approve")
        build = self.submitted_edit(dana)
        member_suspend(actor=self.charlie, member=dana, reassign_to=self.bob)
        member_reactivate(actor=self.charlie, member=dana)
        dana.refresh_from_db()
        dana.user.refresh_from_db()
        assert fresh(build).requester_id == self.bob.pk
        assert build_promotion_blockers(build=fresh(build), approver=dana) == [
            "you wrote drafts in this build: someone else must approve it"
        ]
        with pytest.raises(PromotionBlocked):
            build_promote(actor=dana, build=fresh(build))

    def test_an_edit_whose_author_was_suspended_says_so(self) -> None:
        dana, erin, vic = (member_create(actor=SYSTEM, username=name) for name in ("dana", "erin", "vic"))
        for member in (dana, erin):
            grant_issue(actor=SYSTEM, member=member, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=vic, path="topics/", permission="approve")
        build = self.submitted_edit(dana)
        member_suspend(actor=self.charlie, member=dana, reassign_to=erin)
        [blocker] = build_promotion_blockers(build=fresh(build), approver=vic)
        assert "its author is no longer an active member" in blocker


class OwnerPolicyFallBackTests(BrainTestCase):
    """docs/builds.md: a suspended or departed owner's pages fall back to their approve holders —
    for a delete and a move as for a write."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.olga = member_create(actor=SYSTEM, username="olga")
        cls.req = member_create(actor=SYSTEM, username="req")
        cls.vic = member_create(actor=SYSTEM, username="vic")
        grant_issue(actor=SYSTEM, member=cls.req, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.vic, path="topics/", permission="approve")

    def test_a_delete_and_a_move_of_a_suspended_owners_page_fall_back_to_approvers(self) -> None:
        builds = []
        for number, propose in enumerate((build_delete_page, build_move_page)):
            path = f"topics/o{number}.md"
            publish(path, title="O", owner="olga", change_policy="owner", body="# O\n\nold\n")
            build = build_open(actor=self.req, title=propose.__name__)
            if propose is build_move_page:
                build_move_page(build=build, path=path, new_path=f"topics/moved{number}.md")
            else:
                build_delete_page(build=build, path=path)
            builds.append(build_submit(actor=self.req, build=build))
            assert build_promotion_blockers(build=fresh(build), approver=self.vic)  # olga's, while active
        member_suspend(actor=self.charlie, member=self.olga)
        deleted, moved = builds
        assert build_promotion_blockers(build=fresh(deleted), approver=self.vic) == []
        build_promote(actor=self.vic, build=fresh(deleted))
        assert fresh(deleted).status == Build.Status.PROMOTED
        # Taking the page from its old path falls back as well; the moved page still names olga
        # as its owner, which is the draft's to fix (and said so), not the rule's.
        blockers = build_promotion_blockers(build=fresh(moved), approver=self.vic)
        assert "topics/o1.md: you may not approve taking this page out of the corpus" not in blockers
        assert "topics/moved1.md: its owner (olga) is not an active member; draft it with another owner" in blockers
