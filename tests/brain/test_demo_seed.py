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
        assert "5 unchanged" in out.getvalue()
        assert set(Page.objects.values_list("sensitivity", flat=True)) == {0, 1, 2}

        alice = Member.objects.get(user__username="alice")
        bob = Member.objects.get(user__username="bob")
        charlie = Member.objects.get(user__username="charlie")
        assert "topics/pricing/discount-policy.md" in Page.objects.visible_to(alice).values_list("path", flat=True)
        assert "topics/pricing/discount-policy.md" not in Page.objects.visible_to(bob).values_list("path", flat=True)
        assert not Page.objects.visible_to(charlie).exists()
        assert not Page.objects.visible_to(alice).filter(sensitivity=2).exists()
        assert figure_current(principal=alice, key="discount-ceiling").unit == "%"

    def test_demo_admin_can_sign_in_to_the_admin(self) -> None:
        call_command("demo_seed", stdout=io.StringIO())
        signed_in = self.client.post(
            "/admin/login/?next=/admin/", {"username": "admin", "password": "demo-password-for-tests"}
        )
        assert signed_in.status_code == 302
        response = self.client.get("/admin/")
        assert response.status_code == 200
        assert "Grants" in response.content.decode()
