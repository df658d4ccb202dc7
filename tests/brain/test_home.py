"""The home page tells a member what needs them — and names nothing beyond their grants."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings
from django.utils import timezone

from builds.models import Build
from builds.services import build_open, build_reject, build_submit, build_write_page
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.services import memory_remember
from tests.base import DISCOUNT_POLICY, BrainTestCase, page_markdown, publish


@override_settings(BRAIN_REVERIFY_DAYS={"default": 180, "policy": 30})
class HomeTests(BrainTestCase):
    def setUp(self) -> None:
        self.dora = member_create(actor=SYSTEM, username="dora")
        grant_issue(actor=SYSTEM, member=self.dora, path="topics/pricing/", permission="suggest")
        old = (timezone.localdate() - dt.timedelta(days=200)).isoformat()
        publish("topics/pricing/price-list.md", title="Price list", owner="alice", as_of=old)
        publish("topics/pricing/fresh.md", title="Fresh page", owner="alice")
        publish(
            DISCOUNT_POLICY,
            title="Discount policy",
            owner="alice",
            category="pricing",
            sensitivity="restricted",
            as_of=old,
        )

    def seat_price_update(self) -> Build:
        """Dora's build changing the price list, submitted for review (alice approves it)."""
        build = build_open(actor=self.dora, title="Seat price update")
        build_write_page(
            build=build, path="topics/pricing/price-list.md",
            markdown=page_markdown(owner="alice", title="Price list", body="# Price list\n\nNew seats.\n"),
        )  # fmt: skip
        return build_submit(actor=self.dora, build=build)

    def test_an_approver_sees_what_waits_for_them_and_their_due_pages(self) -> None:
        self.seat_price_update()
        memory_remember(actor=self.alice, content="Quarterly pricing review is in March.")
        self.client.force_login(self.alice.user)
        html = self.client.get("/").content.decode()
        assert "Seat price update" in html  # alice approves topics/pricing/
        assert "Price list" in html
        assert "overdue" in html
        assert "Fresh page" not in html.split("Your pages due")[1].split("Recently approved")[0]
        assert "Quarterly pricing review" in html
        assert "Administration" not in html  # alice is not an administrator

    def test_the_requester_sees_their_build_not_as_one_to_review(self) -> None:
        build = build_open(actor=self.dora, title="My change")
        build_write_page(
            build=build, path="topics/pricing/fresh.md", markdown=page_markdown(owner="alice", title="Fresh page")
        )
        build_submit(actor=self.dora, build=build)
        self.client.force_login(self.dora.user)
        html = self.client.get("/").content.decode()
        to_review, rest = html.split("Your open builds", 1)
        assert "My change" not in to_review
        assert "My change" in rest
        assert "awaiting review" in rest

    def test_the_requester_hears_their_build_was_rejected_and_why_and_cannot_reject_it_themselves(self) -> None:
        """A rejection reached its author nowhere but the build's own page (found only by
        knowing to look), and the author was offered "Reject" on their own build."""
        build = self.seat_price_update()
        self.client.force_login(self.dora.user)
        page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "Withdraw this build" in page
        assert "Reason for rejecting" not in page
        with pytest.raises(ValidationError, match="withdraw it instead"):
            build_reject(actor=self.dora, build=build, note="never mind")
        build_reject(actor=self.alice, build=build, note="Seats are priced per month, not per year.")
        html = self.client.get("/").content.decode()
        returned = html.split("Sent back", 1)[1]
        assert "Seat price update" in returned
        assert "rejected by alice" in returned
        assert "Seats are priced per month, not per year." in returned

    def test_nothing_beyond_the_grants_is_named_and_empty_states_say_what_next(self) -> None:
        self.client.force_login(self.bob.user)  # reads topics/, not the restricted policy
        html = self.client.get("/").content.decode()
        assert "Discount policy" not in html
        assert "Nothing waits for you" in html
        assert "You have no build in progress" in html
        assert "Nothing remembered yet" in html

    def test_administrators_get_the_administration_links(self) -> None:
        self.client.force_login(self.charlie.user)
        assert "Administration" in self.client.get("/").content.decode()

    def test_signed_out_visitors_get_the_introduction(self) -> None:
        html = self.client.get("/").content.decode()
        assert "Sign in" in html
        assert "Administration" not in html
        assert Build.objects.count() == 0
