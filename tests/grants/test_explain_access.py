"""Explain access: agrees with the reference resolver, and says why in words."""

from __future__ import annotations

import io
import os

import pytest
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, settings

from corpus.explain import explain_access
from grants.models import Group, GroupMembership, Permission
from grants.principals import SYSTEM
from grants.services import grant_issue
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish
from tests.grants.test_predicate_property import WorldTestCase, reference_permission, worlds

EXAMPLES = int(os.environ.get("BRAIN_EXPLAIN_EXAMPLES", "500"))


class ExplainMatchesReferenceTests(WorldTestCase):
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=True,
    )
    @given(world=worlds())
    def test_the_explained_permission_is_the_reference_one(self, world: dict) -> None:
        principal = self.load_world(world)
        for page in world["pages"]:
            expected = reference_permission(world, page)
            result = explain_access(principal, page.path)
            assert result.effective == (Permission(expected).label if expected is not None else None), (page, world)
            # Every reaching grant is one the reference counts; the best of them is the answer.
            assert bool(result.reaching) == (expected is not None)
            if result.reaching:
                assert max(Permission.from_name(line.permission) for line in result.reaching) == expected


class ExplainCommandTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")
        cls.sales = Group.objects.create(name="sales")
        GroupMembership.objects.create(group=cls.sales, member=cls.bob)
        grant_issue(actor=SYSTEM, group=cls.sales, category="pricing", permission="read")

    def explain(self, *args: str) -> str:
        out = io.StringIO()
        call_command("brain_access", "explain", *args, stdout=out)
        return out.getvalue()

    def test_a_restricted_page_is_reached_by_an_exact_grant_not_a_folder_grant(self) -> None:
        alice = self.explain("alice", DISCOUNT_POLICY)
        assert "effective permission: approve" in alice
        assert "exact path topics/pricing/discount-policy.md" in alice
        assert "a folder grant reaches ordinary pages only and this page is restricted" in alice

    def test_a_group_grant_is_named_with_its_group(self) -> None:
        bob = self.explain("bob", DISCOUNT_POLICY)
        assert "effective permission: read" in bob
        assert "(group sales): read on category pricing" in bob
        assert "effective permission: read" in self.explain("--group", "sales", DISCOUNT_POLICY)

    def test_nobody_reaches_a_secret_page_and_a_missing_page_is_described(self) -> None:
        out = self.explain("alice", "topics/new-page.md", "--sensitivity", "secret")
        assert "no page at this path" in out
        assert "effective permission: none" in out
        assert "no grant reaches a secret page" in out

    def test_an_admin_without_grants_holds_nothing(self) -> None:
        out = self.explain("charlie", DISCOUNT_POLICY)
        assert "effective permission: none" in out
        assert "it holds no grant at all" in out

    def test_bad_input_is_named(self) -> None:
        with pytest.raises(CommandError, match="no member with username 'nobody'"):
            self.explain("nobody", DISCOUNT_POLICY)
        with pytest.raises(CommandError, match="is not a page path"):
            self.explain("alice", "Topics/Bad Path")
        with pytest.raises(CommandError, match="exactly one"):
            self.explain("alice", DISCOUNT_POLICY, "--group", "sales")
