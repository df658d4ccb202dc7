"""Selectors read only through the predicate; hidden things look like missing things."""

from __future__ import annotations

import datetime as dt
from unittest import mock

import pytest
from django.core.exceptions import PermissionDenied

from corpus.figures import figure_record
from corpus.models import Chunk, Figure, Page, Revision, Source
from corpus.selectors import (
    figure_current,
    figure_history,
    page_find,
    page_links,
    page_read,
    page_relationships,
    source_get_visible,
    source_list_visible,
    source_search,
)
from corpus.sources import source_tag
from grants.principals import SYSTEM
from grants.services import grant_issue
from tests.base import DISCOUNT_POLICY, BrainTestCase, capture, publish


class SelectorTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        capture(
            "gdrive/northwind-msa",
            title="Northwind MSA",
            text="Discounts above twelve percent need sign-off.",
            category="pricing",
        )
        capture("tickets/sup-1042", kind="ticket", title="Onboarding ticket", text="Kick-off within a week.")
        capture("hr/salaries", title="Salaries", text="Compensation bands.", sensitivity="restricted")
        publish(
            DISCOUNT_POLICY,
            title="Discount policy",
            category="pricing",
            sensitivity="restricted",
            sources=["gdrive/northwind-msa"],
        )
        publish(
            "topics/pricing/price-list.md",
            title="Price list",
            related=[DISCOUNT_POLICY, "topics/onboarding.md"],
            body="# Price list\n\nSee [discounts](discount-policy.md) and [onboarding](../onboarding.md).\n",
        )
        publish(
            "topics/onboarding.md",
            title="Onboarding",
            body="# Onboarding\n\nRead the [price list](pricing/price-list.md).\n",
        )
        publish("engineering/runbook.md", title="Runbook")
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.bob, path="captures/tickets/", permission="read")
        figure_record(
            actor=SYSTEM,
            page_path=DISCOUNT_POLICY,
            key="discount-ceiling",
            value="10",
            unit="%",
            as_of=dt.date(2026, 1, 1),
        )
        figure_record(
            actor=SYSTEM,
            page_path=DISCOUNT_POLICY,
            key="discount-ceiling",
            value="12",
            unit="%",
            as_of=dt.date(2026, 9, 2),
            source_key="gdrive/northwind-msa",
        )

    def test_page_find_filters_and_hides(self) -> None:
        assert [p.path for p in page_find(principal=self.bob)] == [
            "topics/onboarding.md",
            "topics/pricing/price-list.md",
        ]
        assert [p.path for p in page_find(principal=self.alice, prefix="topics/pricing/")] == [
            DISCOUNT_POLICY,
            "topics/pricing/price-list.md",
        ]
        assert [p.path for p in page_find(principal=self.alice, words="discount")] == [DISCOUNT_POLICY]
        assert [p.path for p in page_find(principal=self.alice, category="pricing")] == [DISCOUNT_POLICY]
        assert list(page_find(principal=self.charlie)) == []
        assert list(page_find(principal=None)) == []

    def test_page_list_query_count_is_constant(self) -> None:
        with self.assertNumQueries(1):
            pages = list(page_find(principal=self.alice))
            _ = [p.owner.username for p in pages]

    def test_read_hidden_equals_missing(self) -> None:
        view = page_read(principal=self.alice, path=DISCOUNT_POLICY)
        assert view.sources == ["gdrive/northwind-msa"]
        assert view.sensitivity == "restricted"
        errors = []
        for path in (DISCOUNT_POLICY, "topics/does-not-exist.md"):
            with pytest.raises(Page.DoesNotExist) as missing:
                page_read(principal=self.bob, path=path)
            errors.append(type(missing.value))
        assert errors[0] is errors[1]

    def test_relationships_never_name_hidden_pages(self) -> None:
        alice_view = page_relationships(principal=self.alice, path="topics/pricing/price-list.md")
        bob_view = page_relationships(principal=self.bob, path="topics/pricing/price-list.md")
        assert [link["path"] for link in alice_view["links_to"]] == ["topics/onboarding.md", DISCOUNT_POLICY]
        assert [link["path"] for link in bob_view["links_to"]] == ["topics/onboarding.md"]
        assert [link["path"] for link in bob_view["related"]] == ["topics/onboarding.md"]
        assert [link["path"] for link in bob_view["linked_from"]] == ["topics/onboarding.md"]

    def test_a_page_linked_from_many_names_the_first_and_counts_the_rest_readable_ones_only(self) -> None:
        for number in range(5):
            publish(f"topics/fans/fan-{number}.md", title=f"Fan {number}",
                    body="# Fan\n\nSee the [price list](../pricing/price-list.md).\n")  # fmt: skip
        publish("secret/fan.md", title="Hidden fan", body="# Fan\n\n[x](../topics/pricing/price-list.md)\n")
        page = Page.objects.get(path="topics/pricing/price-list.md")
        links = page_links(principal=self.bob, page=page, linked_from_limit=3)
        assert [link["path"] for link in links.linked_from] == [
            "topics/fans/fan-0.md", "topics/fans/fan-1.md", "topics/fans/fan-2.md",
        ]  # fmt: skip
        assert links.linked_from_more == 3  # fan-3, fan-4 and onboarding; never the hidden one
        assert [link["path"] for link in links.links_to] == ["topics/onboarding.md"]  # the other side is whole
        whole = page_links(principal=self.bob, page=page)
        assert len(whole.linked_from) == 6
        assert whole.linked_from_more == 0
        self.client.force_login(self.bob.user)
        with mock.patch("corpus.views.LINKED_FROM_SHOWN", 2):
            body = self.client.get("/pages/topics/pricing/price-list.md").content.decode()
        assert body.count("<li>linked from ") == 2
        assert "and linked from 4 more pages" in body

    def test_revision_and_chunk_visibility_follow_the_page(self) -> None:
        assert Revision.objects.visible_to(self.bob).count() == 2
        assert Revision.objects.visible_to(self.alice).count() == 3
        bob_chunks = set(Chunk.objects.visible_to(self.bob).values_list("body", flat=True))
        assert not any("Summary" in body or "twelve" in body for body in bob_chunks)
        hidden = Chunk.objects.filter(revision_links__revision__page__path=DISCOUNT_POLICY)
        assert hidden.exists()
        assert not Chunk.objects.visible_to(self.bob).filter(pk__in=hidden).exists()
        assert Chunk.objects.visible_to(self.alice).filter(pk__in=hidden).exists()
        assert not Chunk.objects.visible_to(None).exists()

    def test_figures(self) -> None:
        current = figure_current(principal=self.alice, key="discount-ceiling")
        assert (str(current.value), current.unit, current.source.key) == ("12.000000", "%", "gdrive/northwind-msa")
        assert [str(f.value) for f in figure_history(principal=self.alice, key="discount-ceiling")] == [
            "12.000000",
            "10.000000",
        ]
        with pytest.raises(Figure.DoesNotExist):
            figure_current(principal=self.bob, key="discount-ceiling")

    def test_sources_follow_their_own_grants(self) -> None:
        # The restricted hr/salaries needs a grant naming it; alice's prefix grant does not reach it.
        assert {s.key for s in source_list_visible(principal=self.alice)} == {
            "gdrive/northwind-msa",
            "tickets/sup-1042",
        }
        assert [s.key for s in source_list_visible(principal=self.bob)] == ["tickets/sup-1042"]
        with pytest.raises(Source.DoesNotExist):
            source_get_visible(principal=self.bob, key="gdrive/northwind-msa")
        assert [s.key for s in source_search(principal=self.alice, query="twelve percent")] == ["gdrive/northwind-msa"]
        assert list(source_search(principal=self.bob, query="twelve percent")) == []

    def test_one_huge_capture_leaves_capture_search_working_for_everyone(self) -> None:
        """A 2.3 MB upload made a tsvector past PostgreSQL's 1 MB: every reader's capture search
        was a 400 "too complex" from then on."""
        import random
        import string

        rng = random.Random(5)
        rows = "\n".join(f"{n},{''.join(rng.choices(string.ascii_lowercase, k=8))}" for n in range(150_000))
        capture("gdrive/orders", title="Orders export", text=rows)

        assert [s.key for s in source_search(principal=self.alice, query="twelve percent")] == ["gdrive/northwind-msa"]
        assert "gdrive/orders" in [s.key for s in source_search(principal=self.alice, query="orders export")]

    def test_capture_words_are_read_from_the_stored_index_not_parsed_per_query(self) -> None:
        """Each capture search parsed every visible capture's text (up to 200,000 characters
        each) again; the words are now a stored, GIN-indexed column, and the densest text
        measured (distinct hyphenated CJK pairs, indexed whole and by part: 1.27 MB of tsvector
        at 200,000 characters, which refused the row) still fits: a capture of it is stored."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        dense = " ".join(
            chr(0x4E00 + n // 200) + chr(0x4E00 + n % 200) + "-" + chr(0x5E00 + n // 200) + chr(0x5E00 + n % 200)
            for n in range(34_000)
        )
        assert len(dense) > 200_000
        capture("gdrive/dense", title="Dense glossary", text=dense)
        with CaptureQueriesContext(connection) as queries:
            found = [s.key for s in source_search(principal=self.alice, query="glossary")]
        assert "gdrive/dense" in found
        assert not [q["sql"] for q in queries.captured_queries if "to_tsvector" in q["sql"]]
        assert "search_vector" in Source.objects.get(key="gdrive/dense").get_deferred_fields()

    def test_source_tag_needs_suggest(self) -> None:
        source = source_tag(actor=self.alice, key="tickets/sup-1042", add=["  Onboarding ", "northwind"])
        assert source.tags == ["onboarding", "northwind"]
        with pytest.raises(PermissionDenied):
            source_tag(actor=self.bob, key="tickets/sup-1042", add=["x"])
        with pytest.raises(Source.DoesNotExist):
            source_tag(actor=self.bob, key="gdrive/northwind-msa", add=["x"])
        with pytest.raises(Source.DoesNotExist):
            source_tag(actor=self.bob, key="no/such", add=["x"])


class PageFindWordsTests(BrainTestCase):
    def test_each_word_counts_once_whatever_its_case_and_a_long_list_is_refused_at_the_tool(self) -> None:
        import json

        publish("topics/pricing/price-list.md", title="Price list")
        found = page_find(principal=self.bob, words="price PRICE list Price")
        assert [p.path for p in found] == ["topics/pricing/price-list.md"]
        assert list(page_find(principal=self.bob, words="price nothing")) == []
        from builds.services import build_credential_issue, build_open

        _, token = build_credential_issue(actor=self.alice, build=build_open(actor=self.alice, title="x"))
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "find_page", "arguments": {"words": "a " * 8000}}}  # fmt: skip
        answer = self.client.post("/api/build/mcp", data=json.dumps(body), content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {token}").json()  # fmt: skip
        assert answer["result"]["isError"] is True
        assert "words: String should have at most 200 characters" in answer["result"]["content"][0]["text"]
