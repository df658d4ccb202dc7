"""What a browser may keep of a page: fragments apart from pages, secrets shown once never kept,
and the clickjacking header on every HTML answer, the early refusals included."""

from __future__ import annotations

from django.test import Client
from django.utils.cache import has_vary_header

from answers.services import question_ask
from grants.principals import SYSTEM
from grants.services import grant_issue
from ingest.services import document_ingest
from tests.base import BrainTestCase


class ResponseCachingTests(BrainTestCase):
    def setUp(self) -> None:
        self.browser = Client()
        self.browser.force_login(self.alice.user)

    def test_a_page_served_whole_or_as_an_htmx_fragment_varies_on_hx_request(self) -> None:
        """Back to a polling page showed the fragment alone, unstyled, from the browser's cache."""
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        question = question_ask(actor=self.alice, text="Who approves discounts?", enqueue=False)
        extraction = document_ingest(actor=self.alice, filename="n.txt", data=b"notes", key="notes/n", enqueue=False)
        for url in (f"/ask/{question.pk}", f"/sources/{extraction.document.source.key}", "/sources/"):
            with self.subTest(url=url):
                page = self.browser.get(url)
                fragment = self.browser.get(url, HTTP_HX_REQUEST="true")
                assert page.status_code == fragment.status_code == 200
                assert page.content != fragment.content
                assert has_vary_header(page, "HX-Request")
                assert has_vary_header(fragment, "HX-Request")

    def test_a_page_showing_a_new_credential_once_is_never_stored(self) -> None:
        for url in ("/account/memory-tokens/", "/builds/"):
            with self.subTest(url=url):
                response = self.browser.get(url)
                assert response.status_code == 200
                assert "no-store" in response["Cache-Control"]

    def test_the_early_refusals_carry_the_clickjacking_header_too(self) -> None:
        for response in (
            self.browser.get("/search", {"q": "\x00"}),  # refused by the hostile-input middleware
            self.browser.get("/", HTTP_HOST="evil.example"),  # a disallowed host
        ):
            with self.subTest(status=response.status_code):
                assert response.status_code == 400
                assert response["X-Frame-Options"] == "DENY"
