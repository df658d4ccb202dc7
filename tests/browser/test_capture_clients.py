"""Capturing into memory from the browser: the bookmarklet and the Manifest V3 extension, in Chromium.

The page being captured is an article on another origin (a small local server on
127.0.0.1), as it is for a person reading someone else's site; the brain is the live server
on ``localhost``. Every capture is checked on the ``Memory`` row it stored.

The extension runs in Chromium's new headless mode (Playwright's ``headless=True`` on this
Chromium), loaded unpacked with ``--load-extension``. Two things a person does by hand are
done for the browser here, and only these:

- the toolbar click is ``Extensions.triggerAction`` over the DevTools protocol (with
  ``--enable-unsafe-extension-debugging``): a real action click, which grants ``activeTab``
  for the article and opens the popup where no one can see it;
- the brain's origin is granted in the test copy's manifest (``host_permissions``), because
  a headless browser cannot show the prompt the options page's Save asks (an optional host
  permission). The options page then finds it granted, as after the person allowed it.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from django.conf import settings
from playwright.sync_api import BrowserContext, Page, Worker, expect

from grants.principals import SYSTEM
from grants.services import member_create
from memory.capture_views import BOOKMARKLET_URL_BUDGET
from memory.models import Memory
from memory.tokens import api_token_issue
from tests.browser.harness import CHROMIUM_FLAGS, BrowserTestCase, chromium_path

PASSWORD = "pw-alice-123"
EXTENSION = Path(settings.BASE_DIR) / "clients" / "browser" / "extension"
ARTICLE_TITLE = "Release trains at Northwind"
FIRST = "Release trains leave every second Thursday at noon."
SECOND = "A change that misses the train waits for the next one; nobody holds the doors."
THIRD = "Hotfixes ride outside the schedule only with the on-call lead's approval."
LONG = "漢字の列車" * 2_000  # 10,000 characters, 30,000 bytes of UTF-8: far over any URL budget
ARTICLE = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{ARTICLE_TITLE}</title></head>
<body><main><h1>{ARTICLE_TITLE}</h1><p id="first">{FIRST}</p><p id="second">{SECOND}</p>
<p id="third">{THIRD}</p><p id="long">{LONG}</p></main></body></html>""".encode()


class _Article(BaseHTTPRequestHandler):
    """Someone else's site: one article at every path."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(ARTICLE)))
        self.end_headers()
        self.wfile.write(ARTICLE)

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass


@contextmanager
def article_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Article)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/news/release-trains.html"
    finally:
        server.shutdown()
        server.server_close()


def select(page: Page, first: str, last: str | None = None) -> str:
    """Select the paragraphs from ``#first`` to ``#last`` as a person would; returns the selected text."""
    return str(
        page.evaluate(
            """([first, last]) => {
                const range = document.createRange();
                range.setStartBefore(document.getElementById(first).firstChild);
                range.setEndAfter(document.getElementById(last).firstChild);
                const selection = window.getSelection();
                selection.removeAllRanges();
                selection.addRange(range);
                return String(selection);
            }""",
            [first, last or first],
        )
    )


class CaptureClientTests(BrowserTestCase):
    article_url: ClassVar[str]
    _article: ClassVar[Any]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls._article = article_server()
        cls.article_url = cls._article.__enter__()

    @classmethod
    def tearDownClass(cls) -> None:
        cls._article.__exit__(None, None, None)
        super().tearDownClass()

    def setUp(self) -> None:
        super().setUp()
        self.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com", password=PASSWORD)

    # ------------------------------------------------------------------ the bookmarklet

    def bookmarklet_code(self, page: Page) -> str:
        """The script of the bookmarklet the dashboard offers, as a browser runs it (URL-decoded)."""
        page.goto(f"{self.live_server_url}/memory/")
        href = page.locator("a.bookmarklet").first.get_attribute("href") or ""
        assert href.startswith("javascript:"), href
        return unquote(href.removeprefix("javascript:"))

    def test_bookmarklet_opens_the_prefilled_page_and_saves_the_selection(self) -> None:
        brain = self.signed_in("alice", PASSWORD)
        code = self.bookmarklet_code(brain)
        article = brain.context.new_page()
        article.goto(self.article_url)
        selected = select(article, "first", "second")
        assert FIRST in selected
        assert SECOND in selected
        with article.expect_popup() as opened:
            article.evaluate(code)  # what clicking the bookmark does: the script runs in the article
        popup = opened.value
        popup.wait_for_load_state()
        assert popup.url.startswith(f"{self.live_server_url}/memory/capture?url=")
        expect(popup.get_by_label("Title")).to_have_value(ARTICLE_TITLE)
        expect(popup.get_by_label("URL")).to_have_value(self.article_url)
        text = popup.get_by_label("Selected text or a note")
        expect(text).to_have_value(selected.strip())  # line breaks included (carried as U+2028)
        assert "\n" in text.input_value()
        expect(popup.get_by_label("Layer")).to_have_value("personal")  # capture_defaults
        popup.get_by_label("Tags").fill("reading, Releases")
        self.check(popup, "capture-form")
        popup.get_by_role("button", name="Save").click()
        expect(popup.get_by_role("heading", name="Saved")).to_be_visible()
        self.check(popup, "capture-saved")

        memory = Memory.objects.get(author=self.alice)
        assert memory.content == f"{selected.strip()}\n\n{ARTICLE_TITLE}\n{self.article_url}"
        assert (memory.source, memory.workspace) == ("browser", "personal")
        assert {"reading", "releases"} <= set(memory.tags)
        popup.get_by_role("link", name="Open the memory").click()
        expect(popup.locator("pre")).to_contain_text(FIRST)

        # The same capture again: nothing new, and the page says so.
        with article.expect_popup() as again:
            article.evaluate(code)
        second = again.value
        second.get_by_role("button", name="Save").click()
        expect(second.get_by_role("heading", name="Already remembered")).to_be_visible()
        assert Memory.objects.filter(author=self.alice).count() == 1

    def test_bookmarklet_signed_out_signs_in_first_and_cuts_a_long_selection_to_the_url_budget(self) -> None:
        brain = self.signed_in("alice", PASSWORD)
        code = self.bookmarklet_code(brain)
        reader = self.context()  # another browser profile: not signed in to the brain
        article = reader.new_page()
        article.goto(self.article_url)
        select(article, "long")
        with article.expect_popup() as opened:
            article.evaluate(code)
        popup = opened.value
        popup.wait_for_load_state()
        # gunicorn refuses a request line over 4,094 bytes: the bookmarklet keeps under its budget.
        assert popup.url.startswith(f"{self.live_server_url}/login/?next=/memory/capture")
        capture_url = unquote(urlsplit(popup.url).query.removeprefix("next="))
        assert capture_url.startswith("/memory/capture?url=")
        assert len(self.live_server_url + capture_url) <= BOOKMARKLET_URL_BUDGET
        popup.get_by_label("Username").fill("alice")
        popup.get_by_label("Password").fill(PASSWORD)
        popup.get_by_role("button", name="Sign in").click()
        popup.wait_for_url(re.compile(r"/memory/capture\?"))
        kept = popup.get_by_label("Selected text or a note").input_value()
        assert kept.endswith("…")
        assert LONG.startswith(kept[:-1])
        assert 50 < len(kept) < 2_048  # cut again to fit a sign-in's `next` (resume_url)
        popup.get_by_label("Layer").select_option("company")
        popup.get_by_role("button", name="Save").click()
        expect(popup.get_by_role("heading", name="Saved")).to_be_visible()
        memory = Memory.objects.get(author=self.alice)
        assert memory.workspace == "company"
        assert memory.content.endswith(f"{ARTICLE_TITLE}\n{self.article_url}")

    # ------------------------------------------------------------------ the extension

    def extension(self) -> tuple[BrowserContext, Worker, str]:
        """A fresh profile with the extension loaded; returns the context, its service worker and id."""
        workdir = Path(tempfile.mkdtemp(prefix="brain-extension-"))
        self.addCleanup(shutil.rmtree, workdir, True)
        unpacked = workdir / "extension"
        shutil.copytree(EXTENSION, unpacked)
        manifest = json.loads((unpacked / "manifest.json").read_text())
        brain = urlsplit(self.live_server_url)
        # The one grant the options page would ask the person for (see the module docstring).
        manifest["host_permissions"] = [f"{brain.scheme}://{brain.hostname}/*"]
        (unpacked / "manifest.json").write_text(json.dumps(manifest))
        context = self.playwright.chromium.launch_persistent_context(
            str(workdir / "profile"),
            executable_path=chromium_path(),
            headless=True,  # Chromium's new headless mode, which runs extensions
            args=[
                *CHROMIUM_FLAGS,
                "--enable-unsafe-extension-debugging",  # Extensions.triggerAction: the toolbar click
                f"--disable-extensions-except={unpacked}",
                f"--load-extension={unpacked}",
            ],
            ignore_default_args=["--disable-extensions"],
        )
        self.addCleanup(context.close)
        worker = context.service_workers[0] if context.service_workers else context.wait_for_event("serviceworker")
        return context, worker, urlsplit(worker.url).hostname or ""

    def configure(self, context: BrowserContext, extension_id: str, token: str) -> Page:
        """Fill in and save the options page, as the person does after issuing a token."""
        options = context.new_page()
        options.goto(f"chrome-extension://{extension_id}/options.html")
        options.get_by_label("Brain address").fill(self.live_server_url)
        options.get_by_label("Personal token").fill(token)
        options.get_by_role("button", name="Save").click()
        expect(options.locator("#status")).to_have_text(
            f"Saved. The extension may send captures to {self.live_server_url}."
        )
        return options

    def click_toolbar_button(self, context: BrowserContext, extension_id: str, url: str) -> int:
        """The person clicks the extension's button on the tab showing ``url``; returns the tab's id."""
        assert context.browser is not None
        session = context.browser.new_browser_cdp_session()
        targets = session.send("Target.getTargets", {"filter": [{"type": "tab"}]})["targetInfos"]
        (tab,) = [target for target in targets if target["url"] == url]
        session.send("Extensions.triggerAction", {"id": extension_id, "targetId": tab["targetId"]})
        session.detach()
        # activeTab now lets the extension see this tab's address: that is how it is found.
        found = context.service_workers[0].evaluate(
            "async (url) => (await chrome.tabs.query({})).filter((tab) => tab.url === url).map((tab) => tab.id)", url
        )
        assert len(found) == 1, found
        return int(found[0])

    def test_extension_captures_the_selection_with_the_personal_token(self) -> None:
        _, token = api_token_issue(actor=self.alice, name="Chromium", scopes=["memory"])
        context, worker, extension_id = self.extension()
        options = self.configure(context, extension_id, token)
        options.get_by_role("button", name="Test").click()
        expect(options.locator("#status")).to_have_text("Connected: the token sees 0 memories.")
        self.check(options, "extension-options")

        article = context.new_page()
        article.goto(self.article_url)
        selected = select(article, "first", "second")
        tab_id = self.click_toolbar_button(context, extension_id, self.article_url)
        result = worker.evaluate(
            "([tabId, options]) => self.brainCapture(tabId, options)",
            [tab_id, {"tags": ["reading", "Releases"], "note": "For the release retro."}],
        )
        assert result["ok"] is True, result
        memory = Memory.objects.get(author=self.alice)
        assert result["outcome"] == "stored"
        assert result["memoryUrl"] == f"{self.live_server_url}/memory/{memory.pk}/"
        assert memory.content == (
            f"For the release retro.\n\n{selected.strip()}\n\n{ARTICLE_TITLE}\n{self.article_url}"
        )
        assert (memory.source, memory.workspace) == ("browser", "personal")
        assert {"reading", "releases"} <= set(memory.tags)
        assert worker.evaluate("(tabId) => chrome.action.getBadgeText({tabId})", tab_id) == "✓"

        # The popup: tags, a note and the layer, then Save — the same capture function.
        select(article, "third")
        popup = context.new_page()
        popup.goto(f"chrome-extension://{extension_id}/popup.html?tab={tab_id}")
        expect(popup.locator("#page")).to_have_text(ARTICLE_TITLE)
        popup.get_by_label("Tags").fill("hotfix")
        popup.get_by_label(re.compile("^Note")).fill("Ask the on-call lead first.")
        popup.get_by_label("Layer").select_option("company")
        self.check(popup, "extension-popup")
        popup.get_by_role("button", name="Save").click()
        expect(popup.locator("#status")).to_contain_text("Saved to Brain.")
        shared = Memory.objects.get(author=self.alice, workspace="company")
        expect(popup.get_by_role("link", name="Open the memory in Brain")).to_have_attribute(
            "href", f"{self.live_server_url}/memory/{shared.pk}/"
        )
        assert shared.content == f"Ask the on-call lead first.\n\n{THIRD}\n\n{ARTICLE_TITLE}\n{self.article_url}"
        assert "hotfix" in shared.tags
        assert shared.source == "browser"

    def test_extension_with_a_wrong_token_shows_the_error_and_stores_nothing(self) -> None:
        api_token_issue(actor=self.alice, name="Chromium", scopes=["memory"])  # a real one exists, unused
        context, worker, extension_id = self.extension()
        options = self.configure(context, extension_id, "bmt_" + "x" * 43)
        options.get_by_role("button", name="Test").click()
        expect(options.locator("#status")).to_contain_text("The brain refused the token")

        article = context.new_page()
        article.goto(self.article_url)
        select(article, "first")
        tab_id = self.click_toolbar_button(context, extension_id, self.article_url)
        result = worker.evaluate("(tabId) => self.brainCapture(tabId, {})", tab_id)
        assert result["ok"] is False
        assert "refused the token" in result["error"]
        assert worker.evaluate("(tabId) => chrome.action.getBadgeText({tabId})", tab_id) == "!"
        assert not Memory.objects.exists()
        # The popup opened afterwards shows what happened.
        popup = context.new_page()
        popup.goto(f"chrome-extension://{extension_id}/popup.html?tab={tab_id}")
        expect(popup.locator("#status .error")).to_contain_text("refused the token")
