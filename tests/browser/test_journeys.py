"""People's journeys through the web app in a real browser (Debian chromium via Playwright).

Each journey checks what a person sees and does, runs axe-core on every page it visits
(no serious or critical violation) and saves screenshots under ``var/screenshots/``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import zipfile
from urllib.parse import urlencode

from django.test import override_settings
from oauth2_provider.models import Application
from playwright.sync_api import Dialog, expect

from builds.driver import job_step
from builds.models import Build, BuildJob
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from ingest.models import Extraction
from ingest.services import extraction_run
from oauth.config import provider_settings
from tests.base import DISCOUNT_POLICY, capture, page_markdown, publish
from tests.browser.harness import SCREENSHOTS, BrowserTestCase

PASSWORDS = {"alice": "pw-alice-123", "victor": "pw-victor-123", "bob": "pw-bob-12345"}
PRICE_LIST = "topics/pricing/price-list.md"


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


class JourneyTests(BrowserTestCase):
    def setUp(self) -> None:
        super().setUp()
        # Alice proposes, Victor approves pricing, Bob reads: the review flow with no agent.
        self.alice = member_create(
            actor=SYSTEM, username="alice", email="alice@example.com", password=PASSWORDS["alice"]
        )
        self.victor = member_create(
            actor=SYSTEM, username="victor", email="victor@example.com", password=PASSWORDS["victor"]
        )
        self.bob = member_create(actor=SYSTEM, username="bob", email="bob@example.com", password=PASSWORDS["bob"])
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.victor, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=self.bob, path="topics/", permission="read")
        capture("gdrive/msa", title="Northwind MSA", uri="https://drive.example.com/msa")
        publish(
            PRICE_LIST,
            title="Price list",
            sources=["gdrive/msa"],
            related=["topics/pricing/discounts.md"],
            body="# Price list\n\n## Plans\n\nTeam plan at 12 EUR per seat. See [discounts](discounts.md).\n",
        )
        publish(
            "topics/pricing/discounts.md",
            title="Discounts",
            body="# Discounts\n\nUp to 12% without escalation; above that the finance lead approves. "
            "See the [price list](price-list.md) and the [restricted policy](discount-policy.md).\n",
        )
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")
        publish("topics/onboarding/first-day.md", title="First day", type="runbook", owner="bob")

    def test_sign_in_home_search_page_history(self) -> None:
        page = self.signed_in("bob", PASSWORDS["bob"])
        expect(page.get_by_role("heading", name="What needs you")).to_be_visible()
        self.check(page, "home")
        page.get_by_role("link", name="Search", exact=True).click()
        page.get_by_label("Search for").fill("discount escalation")
        page.get_by_role("button", name="Search").click()
        expect(page.get_by_text(re.compile(r"\d+ pages? match"))).to_be_visible()
        assert "**" not in page.inner_text("main")  # snippets are rendered, not Markdown
        self.check(page, "search")
        page.get_by_role("link", name="Discounts", exact=True).first.click()
        expect(page.get_by_role("heading", name="Discounts", level=1)).to_be_visible()
        expect(page.locator("a.unavailable")).to_have_count(1)  # the restricted policy, not a dead link
        self.check(page, "page")
        page.get_by_role("link", name="history").click()
        expect(page.get_by_role("heading", name="History of Discounts")).to_be_visible()
        self.check(page, "history")
        page.goto(f"{self.live_server_url}/pages/")
        expect(page.get_by_text("First day")).to_be_visible()
        self.check(page, "browse")

    def test_the_export_button_shows_progress_and_saves_the_zip(self) -> None:
        page = self.signed_in("bob", PASSWORDS["bob"])
        page.goto(f"{self.live_server_url}/pages/")
        with page.expect_download() as download_info:
            page.get_by_role("link", name=re.compile("Download every page")).click()
        expect(page.locator(".export-status")).to_contain_text("Done: 5 files")  # 3 pages, figures.yml, README.md
        expect(page.locator(".export-progress progress")).to_have_attribute("value", "5")
        download = download_info.value
        assert download.suggested_filename.startswith("brain-export-")
        with zipfile.ZipFile(download.path()) as archive:
            names = set(archive.namelist())
        assert PRICE_LIST in names
        assert DISCOUNT_POLICY not in names
        self.check(page, "export")

    def test_review_flow_from_zip_to_live_page_with_the_approved_diff_kept(self) -> None:
        alice = self.signed_in("alice", PASSWORDS["alice"])
        alice.goto(f"{self.live_server_url}/builds/import")
        alice.get_by_label("Title").fill("Pricing refresh")
        archive = _zip(
            {
                PRICE_LIST: page_markdown(
                    title="Price list",
                    sources=["gdrive/msa"],
                    body="# Price list\n\n## Plans\n\nTeam plan at 14 EUR per seat. See [discounts](discounts.md).\n",
                ),
                "topics/pricing/renewals.md": page_markdown(title="Renewals", body="# Renewals\n\nYearly.\n"),
            }
        )
        alice.set_input_files(
            "input[type=file]", {"name": "pricing.zip", "mimeType": "application/zip", "buffer": archive}
        )
        alice.get_by_role("button", name=re.compile("Import|Open|Upload")).click()
        build = Build.objects.get(title="Pricing refresh")
        while job_step(BuildJob.objects.get(build=build).pk) == "progress":  # the worker's steps
            pass
        alice.reload()
        expect(alice.get_by_text("Who can approve this build: victor")).to_be_visible()
        self.check(alice, "review-requester")

        victor = self.signed_in("victor", PASSWORDS["victor"])
        expect(victor.get_by_role("link", name="Pricing refresh")).to_be_visible()  # home: awaiting your review
        self.check(victor, "home-reviewer")
        victor.get_by_role("link", name="Pricing refresh").click()
        changed = victor.locator(".diff .add ins").filter(has_text=re.compile(r"^14$"))
        expect(changed).to_have_count(1)
        background = changed.evaluate("element => getComputedStyle(element).backgroundColor")
        assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background
        expect(victor.get_by_text("1 new")).to_be_visible()
        self.check(victor, "review")
        victor.get_by_label("Approval note").fill("New prices from January")
        victor.get_by_role("button", name="Approve and promote").click()
        expect(victor.get_by_text("Approved and promoted by victor")).to_be_visible()

        victor.goto(f"{self.live_server_url}/pages/{PRICE_LIST}")
        expect(victor.locator("article")).to_contain_text("14 EUR per seat")
        victor.get_by_role("link", name="history").click()
        expect(victor.get_by_text("New prices from January")).to_be_visible()
        victor.get_by_role("link", name="Pricing refresh").click()
        # The diff that was approved, still there after promotion.
        expect(victor.locator(".diff .del del").filter(has_text=re.compile(r"^12$"))).to_have_count(1)

    def test_a_post_form_is_sent_once_however_often_it_is_submitted(self) -> None:
        """A second click while the first POST was on its way opened a second build, whose
        credential nobody ever saw. Counted where the browser would send the form: a listener on
        the window, after brain.js, sees which submissions are still going ahead (and stops them)."""
        page = self.signed_in("alice", PASSWORDS["alice"])
        page.goto(f"{self.live_server_url}/builds/")
        page.get_by_text("Start an agent build").click()
        page.get_by_label("What the agent should change").fill("Update the price list for 2027")
        sent = page.evaluate(
            """async () => {
                let sent = 0;
                window.addEventListener("submit", (event) => {
                    if (!event.defaultPrevented) sent++;
                    event.preventDefault();
                });
                const form = document.querySelector("details form");
                form.requestSubmit();
                form.requestSubmit();
                await new Promise((resolve) => setTimeout(resolve, 50));
                form.requestSubmit();
                return sent;
            }"""
        )
        assert sent == 1
        expect(page.get_by_role("button", name="Open the build and show its credential")).to_be_disabled()
        assert not Build.objects.filter(title="Update the price list for 2027").exists()

    def test_reject_needs_a_reason(self) -> None:
        build = self._submitted_build()
        victor = self.signed_in("victor", PASSWORDS["victor"])
        victor.goto(f"{self.live_server_url}/builds/{build.public_id}/")
        dialogs: list[str] = []

        def accept(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.accept()

        victor.on("dialog", accept)
        victor.get_by_role("button", name="Reject").click()  # the browser asks for the reason first
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        victor.get_by_label("Reason for rejecting").fill("The renewal terms are not agreed yet")
        victor.get_by_role("button", name="Reject").click()
        expect(victor.get_by_text("Rejected by victor")).to_be_visible()
        assert dialogs  # destructive: it asked for confirmation
        self.check(victor, "rejected")

    def test_upload_live_status_and_source_page(self) -> None:
        alice = self.signed_in("alice", PASSWORDS["alice"])
        alice.goto(f"{self.live_server_url}/sources/upload")
        alice.set_input_files(
            "input[type=file]",
            {"name": "notes.md", "mimeType": "text/markdown", "buffer": b"# Call notes\n\nRenewal in May.\n"},
        )
        alice.get_by_label("Capture id").fill("notes/2026-11-30-call")
        self.check(alice, "upload-form")
        alice.get_by_role("button", name="Upload").click()
        expect(alice.get_by_role("heading", name="notes.md")).to_be_visible()
        extraction = Extraction.objects.latest("created_at")
        extraction_run(extraction.pk)  # the worker, while the page polls
        expect(alice.get_by_text(re.compile(r"Extracted: \d+ characters"))).to_be_visible(timeout=10_000)
        self.check(alice, "source")
        alice.goto(f"{self.live_server_url}/sources/")
        expect(alice.get_by_role("link", name="notes.md").first).to_be_visible()
        self.check(alice, "uploads")

    def test_memory_remember_recall_share(self) -> None:
        bob = self.signed_in("bob", PASSWORDS["bob"])
        bob.goto(f"{self.live_server_url}/memory/")
        bob.get_by_label("What to remember").fill("We ship releases on Thursdays after the QA sign-off.")
        bob.get_by_role("button", name="Remember").click()
        expect(bob.get_by_text("Remembered.")).to_be_visible()
        self.check(bob, "memory-detail")
        bob.get_by_role("button", name="Share with the team").click()
        expect(bob.get_by_text("shared", exact=True).first).to_be_visible()
        bob.goto(f"{self.live_server_url}/memory/?q=when+do+we+release")
        expect(bob.get_by_text("We ship releases on Thursdays")).to_be_visible()
        self.check(bob, "memory-recall")

    def test_oauth_consent_page(self) -> None:
        with override_settings(
            BRAIN_BASE_URL=self.live_server_url, OAUTH2_PROVIDER=provider_settings(self.live_server_url, ["http"])
        ):
            application = Application.objects.create(
                name="Test agent",
                client_type="public",
                authorization_grant_type="authorization-code",
                redirect_uris="http://127.0.0.1:9/callback",
            )
            verifier = "v" * 64
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            query = urlencode(
                {
                    "response_type": "code",
                    "client_id": application.client_id,
                    "redirect_uri": "http://127.0.0.1:9/callback",
                    "scope": "corpus:read",
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "state": "xyz",
                    "resource": f"{self.live_server_url}/api/mcp",
                }
            )
            bob = self.signed_in("bob", PASSWORDS["bob"])
            bob.goto(f"{self.live_server_url}/oauth/authorize/?{query}")
            expect(bob.get_by_role("heading", name="Connect Test agent to Brain?")).to_be_visible()
            self.check(bob, "oauth-consent")

    def test_phone_width_has_no_horizontal_overflow(self) -> None:
        build = self._submitted_build()
        victor = self.signed_in("victor", PASSWORDS["victor"], width=390)
        for name, url in (
            ("home", "/"),
            ("search", "/search?q=discount+escalation"),
            ("page", f"/pages/{PRICE_LIST}"),
            ("review", f"/builds/{build.public_id}/"),
        ):
            victor.goto(f"{self.live_server_url}{url}")
            self.no_horizontal_overflow(victor)
            self.check(victor, f"phone-{name}")
        menu = victor.get_by_role("button", name="Menu")
        expect(menu).to_be_visible()  # the navigation collapses behind it
        menu.click()
        expect(victor.get_by_role("link", name="Pages", exact=True)).to_be_visible()

    def _submitted_build(self) -> Build:
        from builds.driver import import_job_create

        build = import_job_create(
            requester=self.alice,
            files=[("topics/pricing/renewals.md", page_markdown(title="Renewals", body="# Renewals\n\nYearly.\n"))],
            title="Renewal terms",
        )
        while job_step(BuildJob.objects.get(build=build).pk) == "progress":
            pass
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        return build

    def test_an_administrator_explains_access_in_the_admin(self) -> None:
        admin = member_create(actor=SYSTEM, username="carol", role="admin", password="pw-carol-1234")
        # She reads the page she asks about (one she cannot read is explained as no page).
        grant_issue(actor=SYSTEM, member=admin, category="pricing", permission="read")
        carol = self.context().new_page()
        carol.goto(f"{self.live_server_url}/admin/login/?next=/admin/")
        carol.get_by_label("Username").fill("carol")
        carol.get_by_label("Password").fill("pw-carol-1234")
        carol.get_by_role("button", name="Log in").click()
        carol.goto(f"{self.live_server_url}/admin/grants/member/{self.bob.pk}/change/")
        expect(carol.get_by_text("read on topics/")).to_be_visible()  # bob's grants, listed inline
        carol.get_by_role("link", name=re.compile("Why can")).click()
        carol.get_by_label("Page path").fill(DISCOUNT_POLICY)
        carol.get_by_role("button", name="Explain").click()
        expect(carol.get_by_text("Effective permission: none")).to_be_visible()
        expect(carol.get_by_text(re.compile("a folder grant reaches ordinary pages only"))).to_be_visible()
        carol.screenshot(path=str(SCREENSHOTS / "admin-explain-access.png"), full_page=True)

    def test_an_invited_person_sets_a_password_and_signs_in(self) -> None:
        from django.core import mail

        member_create(actor=SYSTEM, username="carol", role="admin", password="pw-carol-1234")
        carol = self.context().new_page()
        carol.goto(f"{self.live_server_url}/admin/login/?next=/admin/grants/member/")
        carol.get_by_label("Username").fill("carol")
        carol.get_by_label("Password").fill("pw-carol-1234")
        carol.get_by_role("button", name="Log in").click()
        carol.get_by_role("link", name="Invite by email").click()
        carol.get_by_label("Username").fill("dana")
        carol.get_by_label("Email").fill("dana@example.com")
        carol.get_by_role("button", name="Send the invitation").click()
        expect(carol.get_by_text(re.compile("Invitation sent to dana@example.com"))).to_be_visible()
        expect(carol.get_by_text(re.compile(r"invited \(link expires"))).to_be_visible()

        (message,) = mail.outbox
        link = re.search(r"https?://\S+(/invite/inv_\S+)", str(message.body))
        assert link, message.body
        dana = self.context().new_page()
        dana.goto(f"{self.live_server_url}{link.group(1)}")
        expect(dana.get_by_role("heading", name="Welcome, dana")).to_be_visible()
        assert "inv_" not in dana.url  # the token left the address bar
        self.check(dana, "invitation-accept")
        dana.get_by_label("New password").fill("dana")
        dana.get_by_label("Repeat it").fill("dana")
        dana.get_by_role("button", name="Set my password").click()
        expect(dana.get_by_text(re.compile("This password is too short"))).to_be_visible()
        dana.get_by_label("New password").fill("quiet harbour 58 lantern")
        dana.get_by_label("Repeat it").fill("quiet harbour 58 lantern")
        dana.get_by_role("button", name="Set my password").click()
        dana.wait_for_url(f"{self.live_server_url}/")
        expect(dana.get_by_text("Welcome, dana. Your password is set; you are signed in.")).to_be_visible()
        dana.get_by_role("link", name="Security").click()
        expect(dana.get_by_text("this browser")).to_be_visible()
        self.check(dana, "security")
        dana.get_by_role("button", name="Sign out").last.click()
        self.signed_in("dana", "quiet harbour 58 lantern")

        # Used once: the same link in a new browser says so.
        again = self.context().new_page()
        again.goto(f"{self.live_server_url}{link.group(1)}")
        expect(again.get_by_role("heading", name="This invitation link cannot be used")).to_be_visible()
        self.check(again, "invitation-used")

    def test_the_api_docs_load_with_no_external_request(self) -> None:
        page = self.context().new_page()
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        page.goto(f"{self.live_server_url}/api/v1/docs/")
        expect(page.get_by_text("Brain REST API").first).to_be_visible(timeout=15_000)
        expect(page.get_by_text("/api/v1/search").first).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / "api-docs.png"), full_page=False)
        external = [
            url for url in requested if not url.startswith(self.live_server_url) and not url.startswith("data:")
        ]
        assert not external, external
        assert any(url.endswith("/api/v1/schema/") or "/api/v1/schema/" in url for url in requested), requested
