"""The people's side: sign-in, search, the reader; hidden = missing = the same 404."""

from __future__ import annotations

import re

from grants.principals import SYSTEM
from grants.services import grant_issue
from tests.base import DISCOUNT_POLICY, BrainTestCase, capture, publish


class ViewTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        capture("gdrive/msa", title="Northwind MSA", uri="https://drive.example.com/msa")
        publish(
            DISCOUNT_POLICY,
            title="Discount policy",
            category="pricing",
            sensitivity="restricted",
            sources=["gdrive/msa"],
            body="# Discount policy\n\n## Ceiling\n\nUp to 12% without escalation. "
            "See the [price list](price-list.md).\n\n<script>alert(1)</script>\n\n[bad](javascript:alert(1))\n",
        )
        publish("topics/pricing/price-list.md", title="Price list", related=[DISCOUNT_POLICY])
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="read")

    def test_anonymous_is_sent_to_sign_in(self) -> None:
        for url in ("/search?q=discount", f"/pages/{DISCOUNT_POLICY}"):
            response = self.client.get(url)
            assert response.status_code == 302
            assert response["location"].startswith("/login/")

    def test_sign_in_page(self) -> None:
        assert self.client.get("/login/").status_code == 200
        response = self.client.post("/login/", {"username": "alice", "password": "pw-alice-123"})
        assert response.status_code == 302

    def test_reader_renders_safely_with_badges_and_sources(self) -> None:
        self.client.force_login(self.alice.user)
        response = self.client.get(f"/pages/{DISCOUNT_POLICY}")
        body = response.content.decode()
        assert response.status_code == 200
        assert "<script>alert(1)</script>" not in body
        assert "&lt;script&gt;" in body
        assert 'href="javascript:' not in body
        assert 'href="/pages/topics/pricing/price-list.md"' in body
        assert "<dt>Held true as of</dt><dd>2026-09-02" in body
        assert "Northwind MSA" in body
        self.client.force_login(self.charlie.user)  # an admin without grants: the same 404 as anyone
        assert self.client.get(f"/pages/{DISCOUNT_POLICY}").status_code == 404
        assert "restricted" in body

    def test_hidden_page_is_the_same_404_as_a_missing_one(self) -> None:
        self.client.force_login(self.bob.user)
        hidden = self.client.get(f"/pages/{DISCOUNT_POLICY}")
        missing = self.client.get("/pages/topics/pricing/nope.md")
        assert hidden.status_code == missing.status_code == 404
        assert self._normalised(hidden) == self._normalised(missing)

    @staticmethod
    def _normalised(response) -> str:
        """The body without what differs per response by design: the request id and CSRF masking."""
        body = response.content.decode().replace(response["x-request-id"], "")
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", body)

    def test_search_page(self) -> None:
        self.client.force_login(self.alice.user)
        response = self.client.get("/search", {"q": "escalation"})
        assert response.status_code == 200
        assert "Discount policy" in response.content.decode()
        assert "<mark>escalation</mark>" in response.content.decode()
        self.client.force_login(self.bob.user)
        response = self.client.get("/search", {"q": "escalation"})
        assert "Discount policy" not in response.content.decode()
        response = self.client.get("/search", {"q": "x", "prefix": "Topics/"})
        assert response.status_code == 400
