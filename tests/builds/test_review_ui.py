"""The review UI end to end in the test client, and build privacy on the web and the API."""

from __future__ import annotations

import io
import json
import re
import uuid
import zipfile

from builds.driver import import_job_create, job_step
from builds.models import Build, BuildJob, Promotion
from builds.services import build_promote
from corpus.models import Page
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import BrainTestCase, page_markdown, publish


def _zip(files: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    buffer.seek(0)
    buffer.name = "pages.zip"
    return buffer


def _normalised(response) -> bytes:
    """The body minus what differs per response by design: the request id and CSRF masking."""
    body = response.content.replace(response["x-request-id"].encode(), b"")
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", body)


class ReviewUiTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor", password="pw-victor-123")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\n## Plans\n\nTeam plan.\n")

    def open_import(self) -> Build:
        self.client.force_login(self.alice.user)
        archive = _zip(
            {
                "topics/pricing/price-list.md": page_markdown(
                    title="Price list", body="# Price list\n\n## Plans\n\nTeam and Enterprise plans.\n"
                ),
                "topics/pricing/renewals.md": page_markdown(title="Renewals", body="# Renewals\n\nYearly.\n"),
            }
        )
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post("/builds/import", {"title": "Pricing refresh", "archive": archive})
        assert response.status_code == 302, response.content
        build = Build.objects.get(title="Pricing refresh")
        job = BuildJob.objects.get(build=build)
        progress = self.client.get(f"/builds/{build.public_id}/progress").content.decode()
        assert "Drafting: 0 of 2 written" in progress
        assert 'hx-trigger="every 2s"' in progress
        while job_step(job.pk) == "progress":  # the worker's steps, run in-process
            pass
        assert "Drafting finished" in self.client.get(f"/builds/{build.public_id}/progress").content.decode()
        return build

    def test_zip_to_live_pages_through_review(self) -> None:
        build = self.open_import()
        page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        # Word-level highlighting: the changed words are marked inside the changed lines.
        assert "Team <ins>and Enterprise plans</ins>." in page
        assert "Team <del>plan</del>." in page
        assert "<strong>1</strong> new" in page
        assert "<strong>1</strong> changed" in page
        assert "<strong>0</strong> deleted" in page
        assert "Who can approve this build: <strong>victor</strong>" in page  # the requester is told
        assert "Preview as it will read" in page
        assert "<p>Yearly.</p>" in page  # the preview, rendered
        assert "Frontmatter as written" in page
        assert "the requester cannot approve their own build" in page
        assert "disabled" in page

        self.client.force_login(self.victor.user)
        queue = self.client.get("/builds/").content.decode()
        assert "Pricing refresh" in queue
        reviewer_view = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "Who can approve" not in reviewer_view  # told to the requester only
        response = self.client.post(f"/builds/{build.public_id}/approve", {"note": "ship it"})
        assert response.status_code == 302
        assert Page.objects.get(path="topics/pricing/renewals.md").title == "Renewals"
        promotion = Promotion.objects.get(build=build)
        assert promotion.approver == self.victor
        assert promotion.note == "ship it"
        approved_page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "Approved and promoted by <strong>victor</strong>" in approved_page
        # A second submit (a double click, a stale tab) said to draft the pages again: their
        # "change since the draft" was this promotion. It says what became of the build.
        again = self.client.post(f"/builds/{build.public_id}/approve", {"note": "ship it"}, follow=True)
        said = again.content.decode()
        assert "Not promoted: the build is not awaiting review (it is Promoted)." in said
        assert "draft it again" not in said
        assert Promotion.objects.filter(build=build).count() == 1

        # The page changes again later: the promoted build still shows the diff that was approved.
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\nEverything changed.\n")
        later = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "Team <ins>and Enterprise plans</ins>." in later
        assert "Everything changed" not in later
        assert "<strong>1</strong> new" in later
        assert "<strong>1</strong> changed" in later

        # The history lists the revision with its build and note, and diffs any two revisions.
        history = self.client.get("/pages/topics/pricing/price-list.md/history").content.decode()
        assert "Pricing refresh" in history
        assert "ship it" in history
        assert "victor" in history
        revisions = list(Page.objects.get(path="topics/pricing/price-list.md").revisions.order_by("promoted_at"))
        first, last = revisions[0].pk, revisions[-1].pk
        compare = self.client.get(f"/pages/topics/pricing/price-list.md/history?from={first}&to={last}")
        assert compare.status_code == 200
        assert "removed: </span>Team plan." in compare.content.decode()
        assert "added: </span><ins>Everything changed.</ins>" in compare.content.decode()
        assert self.client.get("/pages/topics/pricing/price-list.md/history?from=999999&to=999998").status_code == 404

    def test_rejecting_needs_a_reason_and_keeps_what_was_typed(self) -> None:
        build = self.open_import()
        self.client.force_login(self.victor.user)
        response = self.client.post(f"/builds/{build.public_id}/reject", {"reason": "   "})
        assert response.status_code == 400
        assert "Say why you reject this build" in response.content.decode()
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        response = self.client.post(f"/builds/{build.public_id}/reject", {"reason": "Prices are wrong"})
        assert response.status_code == 302
        build.refresh_from_db()
        assert build.status == Build.Status.REJECTED
        self.client.force_login(self.alice.user)
        page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "Rejected by <strong>victor</strong>" in page
        assert "Prices are wrong" in page

    def test_nobody_can_approve_is_said_to_the_requester(self) -> None:
        self.client.force_login(self.bob.user)
        grant_issue(actor=SYSTEM, member=self.bob, path="notes/", permission="suggest")
        archive = _zip({"notes/idea.md": page_markdown(owner="bob", title="Idea")})
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post("/builds/import", {"title": "Orphan", "archive": archive})
        assert response.status_code == 302, response.content
        build = Build.objects.get(title="Orphan")
        while job_step(BuildJob.objects.get(build=build).pk) == "progress":
            pass
        page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "Nobody can approve this build as it stands" in page

    def test_requester_cannot_self_approve_through_the_ui(self) -> None:
        build = self.open_import()
        self.client.post(f"/builds/{build.public_id}/approve", {"note": "mine"})
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        assert not Page.objects.filter(path="topics/pricing/renewals.md").exists()

    def test_invalid_zip_imports_nothing_and_lists_problems(self) -> None:
        self.client.force_login(self.alice.user)
        archive = _zip({"topics/pricing/Bad.md": page_markdown(), "topics/pricing/ok.md": page_markdown()})
        response = self.client.post("/builds/import", {"title": "Broken", "archive": archive})
        assert response.status_code == 400
        assert "topics/pricing/Bad.md" in response.content.decode()
        assert not Build.objects.exists()

    def test_a_zip_made_by_macos_finder_imports_its_pages(self) -> None:
        """Finder adds __MACOSX/…/._name.md, a binary resource fork, for every file: the whole
        archive was refused as "not UTF-8 text", over a file its maker cannot see."""
        self.client.force_login(self.alice.user)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(
                "topics/pricing/renewals.md", page_markdown(title="Renewals", body="# Renewals\n\nYearly.\n")
            )
            archive.writestr("__MACOSX/topics/pricing/._renewals.md", b"\x00\x05\x16\x07\x00\x02Mac OS X \xff\xfe")
        buffer.seek(0)
        buffer.name = "pages.zip"
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post("/builds/import", {"title": "From a Mac", "archive": buffer})
        assert response.status_code == 302, response.content[:300]
        build = Build.objects.get(title="From a Mac")
        job = BuildJob.objects.get(build=build)
        assert job.items.count() == 1  # the page, not Finder's copy
        while job_step(job.pk) == "progress":  # the worker's steps, run in-process
            pass
        assert list(build.changes.values_list("path", flat=True)) == ["topics/pricing/renewals.md"]

    def test_non_participant_response_is_byte_identical_to_a_missing_build(self) -> None:
        build = self.open_import()
        self.client.force_login(self.bob.user)
        real = self.client.get(f"/builds/{build.public_id}/")
        fake = self.client.get(f"/builds/{uuid.uuid4()}/")
        assert real.status_code == fake.status_code == 404
        assert _normalised(real) == _normalised(fake)
        real_api = self.client.get(f"/api/builds/{build.public_id}")
        fake_api = self.client.get(f"/api/builds/{uuid.uuid4()}")
        assert real_api.status_code == fake_api.status_code == 404
        assert _normalised(real_api) == _normalised(fake_api)
        # The approver sees it, through the same endpoints.
        self.client.force_login(self.victor.user)
        assert self.client.get(f"/api/builds/{build.public_id}").json()["status"] == "awaiting_review"


class ReviewPrivacyTests(ReviewUiTests):
    def test_an_approver_of_one_page_sees_nothing_of_the_others(self) -> None:
        from builds.services import build_open, build_submit, build_write_page
        from tests.base import DISCOUNT_POLICY

        grant_issue(actor=SYSTEM, member=self.alice, path=DISCOUNT_POLICY, permission="suggest")
        build = build_open(actor=self.alice, title="Mixed")
        build_write_page(build=build, path="topics/pricing/price-list.md", markdown=page_markdown(title="Price list"))
        build_write_page(
            build=build, path=DISCOUNT_POLICY,
            markdown=page_markdown(title="Secret discounts", category="pricing", sensitivity="restricted",
                                   body="# Discounts\n\nUp to 40% for friends.\n"),
        )  # fmt: skip
        build = build_submit(actor=self.alice, build=build)
        self.client.force_login(self.victor.user)  # approve on topics/ by prefix: not the restricted page
        page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "topics/pricing/price-list.md" in page
        assert "discount-policy" not in page
        assert "40%" not in page
        assert "the build changes pages you may not approve" in page
        api = self.client.get(f"/api/builds/{build.public_id}").json()
        assert [change["path"] for change in api["changes"]] == ["topics/pricing/price-list.md"]
        assert "discount-policy" not in json.dumps(api)


class ReviewPrivacyEdgeTests(BrainTestCase):
    """What the review screen and history must not tell: hidden pages, and content restricted since."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor", password="pw-victor-123")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")
        # A restricted page alice's prefix grant does not reach: to her it is no page at all.
        publish("topics/pricing/hidden-plan.md", title="Hidden plan", sensitivity="restricted")

    def imported(self, title: str, files: dict[str, str]) -> Build:
        build = import_job_create(requester=self.alice, files=list(files.items()), title=title)
        while job_step(BuildJob.objects.get(build=build).pk) == "progress":
            pass
        build.refresh_from_db()
        return build

    def test_who_can_approve_is_the_same_over_a_hidden_page_as_over_a_free_path(self) -> None:
        over_hidden = self.imported("Over hidden", {"topics/pricing/hidden-plan.md": page_markdown(title="Plan")})
        over_free = self.imported("Over free", {"topics/pricing/free-plan.md": page_markdown(title="Plan")})
        self.client.force_login(self.alice.user)
        hidden_page = self.client.get(f"/builds/{over_hidden.public_id}/").content.decode()
        free_page = self.client.get(f"/builds/{over_free.public_id}/").content.decode()
        assert "Who can approve this build: <strong>victor</strong>" in free_page
        assert "Who can approve this build: <strong>victor</strong>" in hidden_page
        assert "Nobody can approve" not in hidden_page

    def test_the_requester_is_told_the_same_blockers_over_a_hidden_page_as_over_a_free_path(self) -> None:
        over_hidden = self.imported("Over hidden", {"topics/pricing/hidden-plan.md": page_markdown(title="Plan")})
        over_free = self.imported("Over free", {"topics/pricing/free-plan.md": page_markdown(title="Plan")})
        self.client.force_login(self.alice.user)

        def blockers(build: Build) -> str:
            body = self.client.get(f"/builds/{build.public_id}/").content.decode()
            return body[body.index("You cannot promote this build") :].split("</div>", 1)[0]

        assert blockers(over_hidden) == blockers(over_free)
        assert "the requester cannot approve their own build" in blockers(over_hidden)

    def test_a_promoted_build_does_not_show_a_page_restricted_since(self) -> None:
        build = self.imported(
            "Two pages",
            {
                "topics/pricing/price-list.md": page_markdown(title="Price list", body="# Price list\n\nSeat 12.\n"),
                "topics/pricing/faq.md": page_markdown(title="FAQ", body="# FAQ\n\nAsk us.\n"),
            },
        )
        build_promote(actor=self.victor, build=build, note="ok")
        publish("topics/pricing/price-list.md", title="Price list", sensitivity="restricted")  # restricted since
        self.client.force_login(self.victor.user)  # approves topics/ pages, ordinary ones only
        page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert "Ask us." in page
        assert "Seat 12." not in page
        assert "topics/pricing/price-list.md" not in page

    def test_history_shows_a_build_note_only_to_those_who_may_read_all_its_pages(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, category="finance", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.victor, category="finance", permission="approve")
        build = self.imported(
            "Mixed build",
            {
                "topics/pricing/faq.md": page_markdown(title="FAQ", body="# FAQ\n\nAsk us.\n"),
                "topics/pricing/margins.md": page_markdown(
                    title="Margins", category="finance", sensitivity="restricted"
                ),
            },
        )
        build_promote(actor=self.victor, build=build, note="margins move to 40%")
        self.client.force_login(self.bob.user)  # reads the FAQ (topics/), not the restricted finance page
        history = self.client.get("/pages/topics/pricing/faq.md/history").content.decode()
        assert "margins move to 40%" not in history
        assert "Mixed build" not in history
        self.client.force_login(self.victor.user)
        assert "margins move to 40%" in self.client.get("/pages/topics/pricing/faq.md/history").content.decode()

    def test_a_previews_link_to_a_page_the_reviewer_cannot_open_is_marked_not_followed(self) -> None:
        publish("topics/pricing/price-list.md", title="Price list")
        build = self.imported("Links", {"topics/pricing/faq.md": page_markdown(
            title="FAQ", body="# FAQ\n\nSee the [incident process](../../engineering/incident-process.md) "
                              "and the [seat prices](price-list.md).\n")})  # fmt: skip
        self.client.force_login(self.victor.user)
        page = self.client.get(f"/builds/{build.public_id}/").content.decode()
        assert 'href="/pages/engineering/incident-process.md"' not in page  # no such page: a 404
        assert '<a class="unavailable" title="Not available to you">incident process</a>' in page
        assert 'href="/pages/topics/pricing/price-list.md"' in page  # live and readable

    def test_history_links_a_build_only_for_those_who_may_open_it(self) -> None:
        """A reader of every page of a build is shown its title, but its page is for its
        requester, participants and approvers: the link led everyone else to a 404."""
        build = self.imported(
            "Plain build", {"topics/pricing/faq.md": page_markdown(title="FAQ", body="# FAQ\n\nAsk.\n")}
        )
        build_promote(actor=self.victor, build=build, note="fine")
        self.client.force_login(self.bob.user)  # reads topics/, approves nothing, did not ask
        history = self.client.get("/pages/topics/pricing/faq.md/history").content.decode()
        assert "Plain build" in history
        assert f'href="/builds/{build.public_id}/"' not in history
        assert self.client.get(f"/builds/{build.public_id}/").status_code == 404
        self.client.force_login(self.victor.user)  # approved it
        assert (
            f'href="/builds/{build.public_id}/"'
            in self.client.get("/pages/topics/pricing/faq.md/history").content.decode()
        )


class LongListTests(BrainTestCase):
    def test_an_old_open_build_stays_listed_and_a_cut_list_says_so(self) -> None:
        from builds.services import build_open

        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="suggest")
        first = build_open(actor=self.alice, title="The oldest, still open")
        for number in range(22):
            Build.objects.filter(pk=build_open(actor=self.alice, title=f"Finished {number}").pk).update(
                status=Build.Status.CANCELLED
            )
        self.client.force_login(self.alice.user)
        html = self.client.get("/builds/").content.decode()
        assert first.title in html
        assert html.count("Finished ") == 20
        assert "2 older finished builds not listed" in html

    def test_the_uploads_page_says_when_it_lists_only_the_newest(self) -> None:
        from functools import partial
        from unittest import mock

        from ingest import views
        from ingest.selectors import uploads_of
        from ingest.services import document_ingest

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        for number in range(3):
            document_ingest(actor=self.alice, filename=f"n{number}.txt", data=f"note {number}".encode(),
                            key=f"notes/n{number}", enqueue=False)  # fmt: skip
        self.client.force_login(self.alice.user)
        with (
            mock.patch.object(views, "UPLOADS_LISTED", 2),
            mock.patch.object(views, "uploads_of", partial(uploads_of, limit=2)),
        ):
            html = self.client.get("/sources/").content.decode()
        assert "The newest 2 of your 3 uploads" in html
        assert "of your" not in self.client.get("/sources/").content.decode()
