"""Browser tests: Playwright for Python driving Debian's chromium against a live server.

The browser is the distribution's (``make browser`` installs it with apt-get); Playwright
never downloads one. Each journey saves screenshots of its key pages under
``var/screenshots/`` for people to look at (they are not compared pixel by pixel), and runs
axe-core on every page it visits: no serious or critical violation is allowed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, ClassVar

from axe_playwright_python.sync_playwright import Axe
from django.conf import settings
from django.contrib.staticfiles.testing import StaticLiveServerTestCase
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
# ordinary synchronous code between browser steps, so Django's guard is lifted for them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
CHROMIUM_FLAGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # the machine has no internet: no calls home
    "--disable-component-update",
    "--disable-sync",
]
SERIOUS = {"serious", "critical"}


def chromium_path() -> str:
    """Debian's chromium (or ``BRAIN_CHROMIUM``); a missing browser fails loudly, never skips."""
    path = os.environ.get("BRAIN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise RuntimeError("chromium is not installed: run `make browser` (apt-get install chromium)")
    return path


class BrowserTestCase(StaticLiveServerTestCase):
    """A live server (static files served) and one headless chromium for the class."""

    playwright: ClassVar[Playwright]
    browser: ClassVar[Browser]
    axe: ClassVar[Axe]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.playwright = sync_playwright().start()
        cls.browser = cls.playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        cls.axe = Axe()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.browser.close()
        cls.playwright.stop()
        super().tearDownClass()

    def context(self, width: int = 1280, height: int = 900) -> BrowserContext:
        context = self.browser.new_context(viewport={"width": width, "height": height})
        self.addCleanup(context.close)
        return context

    def signed_in(self, username: str, password: str, *, width: int = 1280) -> Page:
        """A page signed in through the real sign-in form."""
        page = self.context(width=width).new_page()
        page.goto(f"{self.live_server_url}/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        try:
            page.wait_for_url(f"{self.live_server_url}/", timeout=10_000)
        except Exception as exc:
            raise AssertionError(
                f"sign-in as {username} stayed on {page.url}: {page.inner_text('main')[:500]}"
            ) from exc
        return page

    def check(self, page: Page, name: str) -> None:
        """Screenshot ``page`` as ``name`` and require no serious or critical axe violation."""
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
        results = self.axe.run(page)
        violations: list[dict[str, Any]] = [
            item for item in results.response["violations"] if item.get("impact") in SERIOUS
        ]
        summary = [
            f"{item['id']} ({item['impact']}): {item['help']} — {[node['target'] for node in item['nodes']][:3]}"
            for item in violations
        ]
        assert not violations, f"{name}: accessibility violations:\n" + "\n".join(summary)

    @staticmethod
    def no_horizontal_overflow(page: Page) -> None:
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"{page.url}: content is {widths[0]}px wide in a {widths[1]}px window"
