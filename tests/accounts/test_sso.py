"""Single sign-on end to end: our relying party against a real OIDC provider on loopback."""

from __future__ import annotations

from typing import Any

import requests
from django.conf import settings
from django.test import Client, override_settings

from accounts.models import SignedInSession
from accounts.services import member_suspend
from tests.accounts.oidc_provider import Provider
from tests.base import BrainTestCase

BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "accounts.oidc.MemberOIDCBackend"]


class SingleSignOnTests(BrainTestCase):
    def setUp(self) -> None:
        self.provider = Provider().__enter__()
        self.addCleanup(self.provider.__exit__, None, None, None)
        overrides = override_settings(AUTHENTICATION_BACKENDS=BACKENDS, **self.provider.settings())
        overrides.enable()
        self.addCleanup(overrides.disable)

    def sign_in_as(self, email: str, **person: Any) -> tuple[Client, Any]:
        """Run the whole flow in a browser: start, the provider's redirect back, the callback."""
        self.provider.person = {"sub": f"sub-{email}", "email": email, "email_verified": True, **person}
        browser = Client()
        start = browser.get("/sso/start")
        assert start.status_code == 302
        assert start["Location"].startswith(f"{self.provider.base}/authorize?")
        back = requests.get(start["Location"], allow_redirects=False, timeout=10)
        assert back.status_code == 302
        callback = back.headers["Location"].replace(settings.BRAIN_BASE_URL, "")
        return browser, browser.get(callback)

    def test_a_member_signs_in_through_the_provider(self) -> None:
        browser, done = self.sign_in_as("bob@example.com")
        assert done.status_code == 302
        assert done["Location"] == "/"
        home = browser.get("/")
        assert home.status_code == 200
        assert b"bob" in home.content
        entry = SignedInSession.objects.get(user=self.bob.user)
        assert entry.via == "sso"

    def test_the_sign_in_page_offers_sso_and_local_passwords_stay(self) -> None:
        page = Client().get("/login/").content.decode()
        assert "/sso/start" in page
        assert 'name="password"' in page

    def test_an_unknown_email_or_an_unverified_one_is_refused(self) -> None:
        for email, extra in (
            ("stranger@example.com", {}),
            ("bob@example.com", {"email_verified": False}),
            ("bob@example.com", {"email_verified": None}),  # a provider that does not say
        ):
            browser, done = self.sign_in_as(email, **extra)
            assert done.status_code == 302
            assert done["Location"] == "/login/?sso=failed"
            assert browser.get("/account/security/").status_code == 302
        page = Client().get("/login/?sso=failed").content.decode()
        assert "did not match an active member" in page

    def test_a_suspended_member_is_refused_and_their_sso_session_ends(self) -> None:
        browser, _ = self.sign_in_as("bob@example.com")
        assert browser.get("/account/security/").status_code == 200
        member_suspend(actor=self.charlie, member=self.bob)
        assert browser.get("/account/security/").status_code == 302
        _, again = self.sign_in_as("bob@example.com")
        assert again["Location"] == "/login/?sso=failed"

    def test_an_id_token_for_another_audience_or_issuer_is_refused(self) -> None:
        self.provider.audience_override = "someone-else"
        _, done = self.sign_in_as("bob@example.com")
        assert done["Location"] == "/login/?sso=provider"  # nothing Brain could check
        self.provider.audience_override = None
        self.provider.issuer_override = "https://evil.example"
        _, done = self.sign_in_as("bob@example.com")
        assert done["Location"] == "/login/?sso=provider"
        assert "did not answer in a way Brain could check" in Client().get(done["Location"]).content.decode()

    def test_a_provider_that_is_down_is_a_failed_sign_in_not_a_server_error(self) -> None:
        browser = Client()
        start = browser.get("/sso/start")
        back = requests.get(start["Location"], allow_redirects=False, timeout=10)
        callback = back.headers["Location"].replace(settings.BRAIN_BASE_URL, "")
        self.provider.__exit__(None, None, None)
        done = browser.get(callback)
        assert done.status_code == 302
        assert done["Location"] == "/login/?sso=provider"

    def test_a_cancelled_or_finished_sign_on_says_so_not_a_bare_400(self) -> None:
        browser = Client()
        browser.get("/sso/start")
        cancelled = browser.get("/sso/callback?error=access_denied&state=x")
        assert cancelled["Location"] == "/login/?sso=cancelled"
        assert "cancelled or refused" in Client().get(cancelled["Location"]).content.decode()
        for other in (Client(), browser):  # no sign-on started there; one started, another state
            replayed = other.get("/sso/callback?code=used&state=not-this-browsers")
            assert replayed.status_code == 302
            assert replayed["Location"] == "/login/?sso=expired"
        assert "Start it again" in Client().get(replayed["Location"]).content.decode()


class SingleSignOnOffTests(BrainTestCase):
    def test_sso_routes_are_404_and_the_page_offers_no_button_when_not_configured(self) -> None:
        assert Client().get("/sso/start").status_code == 404
        assert Client().get("/sso/callback?code=x&state=y").status_code == 404
        assert "/sso/start" not in Client().get("/login/").content.decode()
