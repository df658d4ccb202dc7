"""The seed's worked example: Alice's three grants and the restricted discount policy."""

from __future__ import annotations

import pytest

from corpus.models import Chunk, Page
from corpus.selectors import page_find, page_read, page_relationships
from grants.models import Permission, Sensitivity
from grants.predicates import effective_permission
from grants.principals import SYSTEM
from grants.services import grant_revoke
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish


class WorkedExampleTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.page = publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")
        publish("topics/pricing/price-list.md", title="Price list", related=[DISCOUNT_POLICY])

    def test_three_grants_give_approve_on_the_restricted_page(self) -> None:
        held = effective_permission(
            self.alice, path=DISCOUNT_POLICY, category="pricing", sensitivity=Sensitivity.RESTRICTED
        )
        assert held == Permission.APPROVE
        assert Page.objects.visible_to(self.alice, "approve").filter(path=DISCOUNT_POLICY).exists()

    def test_without_the_third_grant_she_has_nothing_on_it(self) -> None:
        grant_revoke(actor=SYSTEM, grant=self.alice_exact_grant)
        # Grants are read on every call: the revocation counts immediately.
        assert (
            effective_permission(
                self.alice, path=DISCOUNT_POLICY, category="pricing", sensitivity=Sensitivity.RESTRICTED
            )
            is None
        )
        assert not Page.objects.visible_to(self.alice, "read").filter(path=DISCOUNT_POLICY).exists()
        titles = [page.title for page in page_find(principal=self.alice, prefix="topics/")]
        assert "Discount policy" not in titles
        assert titles == ["Price list"]
        with pytest.raises(Page.DoesNotExist):
            page_read(principal=self.alice, path=DISCOUNT_POLICY)
        assert page_relationships(principal=self.alice, path="topics/pricing/price-list.md")["related"] == []
        hidden_chunks = Chunk.objects.filter(revision_links__revision__page=self.page)
        assert not Chunk.objects.visible_to(self.alice).filter(pk__in=hidden_chunks).exists()

    def test_prefix_grants_alone_never_reach_a_restricted_page(self) -> None:
        assert not Page.objects.visible_to(self.bob).filter(path=DISCOUNT_POLICY).exists()
        assert [p.path for p in Page.objects.visible_to(self.bob)] == ["topics/pricing/price-list.md"]

    def test_admin_role_confers_no_content_access(self) -> None:
        assert not Page.objects.visible_to(self.charlie).exists()
        assert not Page.objects.visible_to(None).exists()
        assert Page.objects.visible_to(SYSTEM).count() == 2

    def test_unknown_permission_selects_nothing(self) -> None:
        assert not Page.objects.visible_to(self.alice, "delete").exists()
        assert not Page.objects.visible_to(self.alice, 7).exists()
