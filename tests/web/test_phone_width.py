"""The memory settings page fits a 375 px phone (a browser test: layout needs a real engine)."""

from __future__ import annotations

from grants.principals import SYSTEM
from grants.services import member_create
from tests.browser.harness import BrowserTestCase


class PhoneWidthTests(BrowserTestCase):
    def test_memory_settings_fit_a_375px_phone(self) -> None:
        # The "Weekly insights" fieldset took its widest option's width: 425 px in a 375 px window.
        member_create(actor=SYSTEM, username="alice", password="pw-alice-123", role="admin")
        page = self.signed_in("alice", "pw-alice-123", width=375)
        page.goto(f"{self.live_server_url}/memory/settings/")
        self.no_horizontal_overflow(page)
        self.check(page, "phone-memory-settings")
