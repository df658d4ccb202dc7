"""Deletes and moves on a branch: proposed by the requester, applied only by a promotion."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from builds.services import build_delete_page, build_move_page, build_open, build_promote, build_submit
from corpus.models import Page, Revision
from corpus.selectors import page_read
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish


class BranchChangeTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\n## Plans\n\nTeam plan.\n")
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted")

    def test_delete_is_applied_by_promotion_and_keeps_history(self) -> None:
        build = build_open(actor=self.alice, title="Retire the price list")
        build_delete_page(build=build, path="topics/pricing/price-list.md")
        assert page_read(principal=self.bob, path="topics/pricing/price-list.md").title == "Price list"
        build = build_submit(actor=self.alice, build=build)
        revisions = Revision.objects.count()
        promotion = build_promote(actor=self.victor, build=build)
        assert promotion.approved == [{"path": "topics/pricing/price-list.md", "action": "delete", "sha256": ""}]
        with pytest.raises(Page.DoesNotExist):
            page_read(principal=self.bob, path="topics/pricing/price-list.md")
        assert Page.objects.get(path="topics/pricing/price-list.md").current_revision is None
        assert Revision.objects.count() == revisions

    def test_move_goes_live_at_the_new_path_only(self) -> None:
        build = build_open(actor=self.alice, title="Rename")
        build_move_page(build=build, path="topics/pricing/price-list.md", new_path="topics/pricing/plans.md")
        assert not Page.objects.filter(path="topics/pricing/plans.md").exists()
        build = build_submit(actor=self.alice, build=build)
        build_promote(actor=self.victor, build=build)
        moved = page_read(principal=self.bob, path="topics/pricing/plans.md")
        assert "Team plan." in moved.body
        with pytest.raises(Page.DoesNotExist):
            page_read(principal=self.bob, path="topics/pricing/price-list.md")

    def test_guards(self) -> None:
        bobs = build_open(actor=self.bob, title="Bob")
        with pytest.raises(PermissionDenied):
            build_delete_page(build=bobs, path="topics/pricing/price-list.md")
        with pytest.raises(Page.DoesNotExist):
            build_delete_page(build=bobs, path=DISCOUNT_POLICY)  # hidden from Bob: same as missing
        alices = build_open(actor=self.alice, title="Alice")
        with pytest.raises(ValidationError):
            build_move_page(build=alices, path="topics/pricing/price-list.md", new_path=DISCOUNT_POLICY)
