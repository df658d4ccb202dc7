"""Pages fit a phone (a browser test: layout needs a real engine)."""

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

    def test_table_cells_keep_their_words_at_360px(self) -> None:
        """The body's "overflow-wrap: anywhere" squeezed table columns to a letter at 360 px
        ("Ad/dr/es/s", an IP address over three lines); a cell now breaks only a word wider
        than itself, and a table too wide scrolls in its own box, never the page."""
        member_create(actor=SYSTEM, username="alice", password="pw-alice-123")
        page = self.signed_in("alice", "pw-alice-123", width=360)
        for url in ("/memory/calendars/", "/sources/", "/account/security/"):
            page.goto(f"{self.live_server_url}{url}")
            self.no_horizontal_overflow(page)
        # Every header word on one line: the line boxes of each cell's text (a cell's own box is
        # as tall as its row, whatever its text).
        lines = page.evaluate(
            """() => [...document.querySelectorAll("main th")]
                 .filter(th => !th.querySelector(".visually-hidden")).map(th => {
                 const range = document.createRange();
                 range.selectNodeContents(th);
                 return [th.textContent.trim(), new Set([...range.getClientRects()].map(r => Math.round(r.top))).size];
               })"""
        )
        assert lines, "the security page lists its sessions in a table"
        split = [text for text, count in lines if " " not in text and count > 1]
        assert not split, f"header words broken across lines: {split}"
