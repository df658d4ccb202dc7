from __future__ import annotations

import io

from django.core.management import call_command
from django.test import TestCase, override_settings

from corpus.models import Page
from corpus.selectors import figure_current
from grants.models import Member


@override_settings(BRAIN_DEMO_PASSWORD="demo-password-for-tests")
class DemoSeedTests(TestCase):
    def test_seed_is_idempotent_and_spans_the_three_tiers(self) -> None:
        call_command("demo_seed", stdout=io.StringIO())
        counts = (Member.objects.count(), Page.objects.count())
        out = io.StringIO()
        call_command("demo_seed", stdout=out)
        assert (Member.objects.count(), Page.objects.count()) == counts
        assert "pages 0 created, 5 already there and left as they are" in out.getvalue()
        assert set(Page.objects.values_list("sensitivity", flat=True)) == {0, 1, 2}

        alice = Member.objects.get(user__username="alice")
        bob = Member.objects.get(user__username="bob")
        charlie = Member.objects.get(user__username="charlie")
        assert "topics/pricing/discount-policy.md" in Page.objects.visible_to(alice).values_list("path", flat=True)
        assert "topics/pricing/discount-policy.md" not in Page.objects.visible_to(bob).values_list("path", flat=True)
        assert not Page.objects.visible_to(charlie).exists()
        assert not Page.objects.visible_to(alice).filter(sensitivity=2).exists()
        assert figure_current(principal=alice, key="discount-ceiling").unit == "%"

    def test_reseeding_keeps_what_people_approved_since_and_what_they_retired(self) -> None:
        from tests.base import publish

        call_command("demo_seed", stdout=io.StringIO())
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\nApproved since.\n")
        Page.objects.filter(path="topics/onboarding.md").update(current_revision=None)  # retired
        call_command("demo_seed", stdout=io.StringIO())
        price_list = Page.objects.get(path="topics/pricing/price-list.md")
        assert "Approved since." in price_list.current_revision.body
        assert Page.objects.get(path="topics/onboarding.md").current_revision is None

    def test_a_second_approver_reviews_what_alice_proposes(self) -> None:
        call_command("demo_seed", stdout=io.StringIO())
        erin = Member.objects.get(user__username="erin")
        approvable = set(Page.objects.visible_to(erin, "approve").values_list("path", flat=True))
        assert "topics/pricing/price-list.md" in approvable

    def test_demo_admin_can_sign_in_to_the_admin(self) -> None:
        call_command("demo_seed", stdout=io.StringIO())
        signed_in = self.client.post(
            "/admin/login/?next=/admin/", {"username": "admin", "password": "demo-password-for-tests"}
        )
        assert signed_in.status_code == 302
        response = self.client.get("/admin/")
        assert response.status_code == 200
        assert "Grants" in response.content.decode()

    def test_the_personas_printed_and_documented_are_the_people_seeded(self) -> None:
        from pathlib import Path

        from home.demo.personas import PERSONAS

        call_command("demo_seed", stdout=io.StringIO())
        readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
        for name, _ in PERSONAS:
            assert Member.objects.filter(user__username=name).exists(), name
            assert f"| `{name}` |" in readme, name
