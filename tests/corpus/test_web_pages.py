"""The people's web pages over the corpus: browse tree, page header, history, search groups, uploads."""

from __future__ import annotations

import datetime as dt
import re
from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile

from corpus.diffs import WORD_DIFF_MAX_BLOCK_LINES, line_diff
from corpus.figures import figure_record
from corpus.search import SearchResult
from corpus.search_results import group_by_page
from grants.principals import SYSTEM
from grants.services import grant_issue
from tests.base import DISCOUNT_POLICY, BrainTestCase, capture, publish


class DiffTests(BrainTestCase):
    def test_changed_words_are_marked_and_text_is_escaped(self) -> None:
        diff = line_diff(["<b>Team</b> plan.", "same"], ["<b>Team</b> plans & more.", "same"])
        html = str(diff.html())
        assert "&lt;b&gt;Team&lt;/b&gt;" in html
        assert "<b>" not in html
        assert "<ins>plans &amp; more</ins>" in html
        assert diff.added == diff.removed == 1

    def test_identical_texts_have_no_rows_and_a_new_text_is_all_added(self) -> None:
        assert line_diff(["a", "b"], ["a", "b"]).unchanged
        created = line_diff([], ["a", "b"])
        assert created.added == 2
        assert all(line.kind == "add" for line in created.lines)

    def test_a_huge_block_skips_word_level_work(self) -> None:
        size = WORD_DIFF_MAX_BLOCK_LINES + 1
        diff = line_diff([f"old {i}" for i in range(size)], [f"new {i}" for i in range(size)])
        assert all(len(line.segments) == 1 for line in diff.lines)  # whole lines, no word-level pass


class BrowseAndPageTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        capture("gdrive/msa", title="Northwind MSA", uri="https://drive.example.com/msa")
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")
        publish(
            "topics/pricing/price-list.md",
            title="Price list",
            sources=["gdrive/msa"],
            body="# Price list\n\nSee the [discount policy](discount-policy.md) and [nothing](gone.md).\n",
        )
        publish("topics/onboarding/first-day.md", title="First day", type="runbook", owner="bob")
        publish("secret-plans/launch.md", title="Launch")  # nobody here reads it
        grant_issue(actor=SYSTEM, member=cls.bob, path="captures/", permission="read")
        figure_record(
            actor=SYSTEM,
            page_path="topics/pricing/price-list.md",
            key="team-seat-price",
            value="12.50",
            unit="EUR",
            as_of=dt.date(2026, 9, 1),
            source_key="gdrive/msa",
        )

    def test_the_tree_shows_only_readable_paths_with_counts_and_filters(self) -> None:
        self.client.force_login(self.bob.user)
        body = self.client.get("/pages/").content.decode()
        assert "Price list" in body
        assert "First day" in body
        assert "Discount policy" not in body
        assert "secret-plans" not in body
        assert '<strong>topics/</strong> <span class="count">2 pages</span>' in body
        filtered = self.client.get("/pages/", {"type": "runbook"}).content.decode()
        assert "First day" in filtered
        assert "Price list" not in filtered
        assert '<option value="runbook" selected>' in filtered  # the filter keeps its value
        empty = self.client.get("/pages/", {"owner": "nobody"}).content.decode()
        assert "No page you can read matches these filters" in empty
        # Owners are named (not numbered) in the choices and the list, and filter by name.
        by_alice = self.client.get("/pages/", {"owner": "alice"}).content.decode()
        assert "Price list" in by_alice
        assert '<option value="alice" selected>' in by_alice
        assert "· alice</span>" in by_alice

    def test_a_large_tree_is_listed_folder_by_folder(self) -> None:
        """Past FULL_TREE_LIMIT pages the tree is one folder at a time, never every page at once."""
        publish("topics/onboarding/laptop.md", title="Laptop", type="runbook", owner="bob")
        publish("topics/onboarding/badge.md", title="Badge", type="runbook", owner="bob")
        self.client.force_login(self.bob.user)
        with mock.patch("corpus.views.FULL_TREE_LIMIT", 2), mock.patch("corpus.browse.PAGES_SHOWN", 2):
            top = self.client.get("/pages/").content.decode()
            assert 'href="/pages/?prefix=topics%2F"><strong>topics/</strong></a> <span class="count">4 pages' in top
            assert "First day" not in top  # the pages are a folder away
            assert "secret-plans" not in top
            onboarding = self.client.get("/pages/", {"prefix": "topics/onboarding/"}).content.decode()
            assert onboarding.count('<a href="/pages/topics/onboarding/') == 2  # PAGES_SHOWN of the 3
            assert "and 1 more page here" in onboarding
            assert "up one folder" in onboarding
            assert 'href="/pages/?prefix=topics%2F"' in onboarding  # up one folder
            every = self.client.get("/pages/", {"prefix": "topics/onboarding/", "all": "1"}).content.decode()
            assert every.count('<a href="/pages/topics/onboarding/') == 3
            # Filters are kept on the folder links.
            # A small folder opened by prefix is listed whole, and still has its way up.
            small = self.client.get("/pages/", {"prefix": "topics/pricing/"}).content.decode()
            assert "Price list" in small
            assert 'href="/pages/?prefix=topics%2F">up one folder' in small
            runbooks = self.client.get("/pages/", {"type": "runbook"}).content.decode()
            assert 'href="/pages/?type=runbook&amp;prefix=topics%2F"' in runbooks
            assert '<span class="count">3 pages' in runbooks

    def test_the_page_header_sources_figures_and_unavailable_links(self) -> None:
        self.client.force_login(self.bob.user)
        body = self.client.get("/pages/topics/pricing/price-list.md").content.decode()
        assert "<dt>Owner</dt><dd>alice</dd>" in body
        assert 'href="/sources/gdrive/msa"' in body  # the in-app source page first
        assert 'href="https://drive.example.com/msa"' in body  # the original as a secondary link
        assert "team-seat-price" in body
        assert "12.5 EUR" in body
        # Bob cannot read the discount policy; a missing page is marked the same way.
        assert body.count('class="unavailable"') == 2
        # ... as words, not links to follow into a 404.
        assert body.count('<a class="unavailable" title="Not available to you">') == 2
        assert 'href="/pages/topics/pricing/discount-policy.md"' not in body
        assert "history" in body

    def test_a_figure_links_its_capture_only_for_those_who_may_open_it(self) -> None:
        self.client.force_login(self.alice.user)  # reads the page, holds no grant on captures/
        body = self.client.get("/pages/topics/pricing/price-list.md").content.decode()
        assert "team-seat-price" in body
        assert 'href="/sources/gdrive/msa"' not in body
        self.client.force_login(self.bob.user)
        assert 'href="/sources/gdrive/msa"' in self.client.get("/pages/topics/pricing/price-list.md").content.decode()

    def test_many_objects_are_weighed_in_one_query(self) -> None:
        from grants.predicates import effective_permissions

        # 20,000 objects at four values each would pass PostgreSQL's 65,535-parameter limit.
        objects: list[tuple[str, str | None, int]] = [(f"topics/bulk/p{index}.md", None, 0) for index in range(20_000)]
        held = effective_permissions(self.bob, objects)
        assert len(held) == 20_000
        assert set(held) == {1}

    def test_a_page_someone_cannot_read_says_not_available(self) -> None:
        self.client.force_login(self.bob.user)
        hidden = self.client.get(f"/pages/{DISCOUNT_POLICY}")
        missing = self.client.get("/pages/topics/pricing/gone.md")
        assert hidden.status_code == missing.status_code == 404
        assert "This page is not available to you" in hidden.content.decode()
        assert self.client.get(f"/pages/{DISCOUNT_POLICY}/history").status_code == 404

    def test_relationships_are_drawn_for_pages_the_reader_can_see(self) -> None:
        publish("topics/pricing/faq.md", title="Pricing FAQ", body="# FAQ\n\n[Prices](price-list.md)\n")
        self.client.force_login(self.alice.user)
        body = self.client.get("/pages/topics/pricing/price-list.md").content.decode()
        assert '<svg class="graph"' in body
        assert "Pricing FAQ" in body

    def test_history_lists_revisions_with_who_and_when(self) -> None:
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\nNew prices.\n")
        self.client.force_login(self.bob.user)
        body = self.client.get("/pages/topics/pricing/price-list.md/history").content.decode()
        assert body.count('name="from"') == 2
        assert "the system (import)" in body


class SearchGroupingTests(BrainTestCase):
    @staticmethod
    def result(path: str, lexical: int | None, similarity: float | None) -> SearchResult:
        return SearchResult(path, path, "topic", None, "", "", "", 0.0, None, lexical, semantic_similarity=similarity)

    def test_results_fold_into_pages_and_meaning_only_hits_need_the_floor(self) -> None:
        groups = group_by_page(
            [self.result("a.md", 1, 0.1), self.result("a.md", None, 0.6), self.result("b.md", None, 0.1)], floor=0.25
        )
        assert [group.path for group in groups] == ["a.md"]
        assert len(groups[0].more) == 1

    def test_a_nonsense_query_says_no_results(self) -> None:
        publish("topics/pricing/price-list.md", title="Price list")
        self.client.force_login(self.bob.user)
        body = self.client.get("/search", {"q": "xqzvbn wrtplk"}).content.decode()
        assert "No results you can see" in body
        found = self.client.get("/search", {"q": "price list", "prefix": "topics/"}).content.decode()
        assert "1 page matches" in found
        assert 'value="topics/"' in found


class UploadPagesTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/uploads/", permission="suggest")

    def upload(self, data: bytes) -> str:
        response = self.client.post("/sources/upload", {"file": SimpleUploadedFile("notes.md", data)}, follow=True)
        assert response.status_code == 200, response.content.decode()[-1500:]
        return response.content.decode()

    def test_a_refused_upload_keeps_what_was_typed_but_never_a_secret(self) -> None:
        self.client.force_login(self.alice.user)
        secret_title = "Notes " + "AKIA" + "QYLPMN5HHHFPZAM2"
        response = self.client.post(
            "/sources/upload",
            {"file": SimpleUploadedFile("notes.md", b"# Notes\n"), "title": secret_title, "key": "Bad Key!"},
        )
        body = response.content.decode()
        assert response.status_code == 400
        assert "QYLPMN5HHHFPZAM2" not in body
        response = self.client.post(
            "/sources/upload",
            {"file": SimpleUploadedFile("notes.md", b"# Notes\n"), "title": "Call notes", "key": "Bad Key!"},
        )
        assert response.status_code == 400
        assert 'value="Call notes"' in response.content.decode()

    def test_my_uploads_download_and_reupload(self) -> None:
        self.client.force_login(self.alice.user)
        first = self.upload(b"# Notes\n\n<script>alert(1)</script>\n")
        assert "You uploaded exactly these bytes before" not in first
        again = self.upload(b"# Notes\n\n<script>alert(1)</script>\n")
        assert "You uploaded exactly these bytes before" in again
        listing = self.client.get("/sources/").content.decode()
        assert listing.count(" download>") == 1  # one row: the second upload stored nothing
        original = re.search(r'href="(/sources/[^"]+/original)"', listing)
        assert original is not None
        download = self.client.get(original.group(1))
        assert download.status_code == 200
        assert download["Content-Type"] == "application/octet-stream"
        assert download["Content-Disposition"].startswith("attachment")
        assert b"".join(download.streaming_content) == b"# Notes\n\n<script>alert(1)</script>\n"  # type: ignore[attr-defined]
        self.client.force_login(self.bob.user)  # bob cannot read alice's upload scope
        assert self.client.get(original.group(1)).status_code == 404
        assert "You have not uploaded anything yet" in self.client.get("/sources/").content.decode()
