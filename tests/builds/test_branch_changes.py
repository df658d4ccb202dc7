"""Deletes and moves on a branch: proposed by the requester, applied only by a promotion."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from builds.services import build_delete_page, build_move_page, build_open, build_promote, build_submit
from corpus.models import Page, Revision
from corpus.selectors import page_read
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish


class BranchTestCase(BrainTestCase):
    """The personas, victor approving ``topics/``, the price list and the restricted policy."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\n## Plans\n\nTeam plan.\n")
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted")

    def move(self, path: str, new_path: str) -> None:
        """Alice moves the page; victor promotes the move."""
        build = build_open(actor=self.alice, title=f"Move {path}")
        build_move_page(build=build, path=path, new_path=new_path)
        build_promote(actor=self.victor, build=build_submit(actor=self.alice, build=build))


class BranchChangeTests(BranchTestCase):
    def test_delete_is_applied_by_promotion_and_keeps_history(self) -> None:
        build = build_open(actor=self.alice, title="Retire the price list")
        build_delete_page(build=build, path="topics/pricing/price-list.md")
        assert page_read(principal=self.bob, path="topics/pricing/price-list.md").title == "Price list"
        build = build_submit(actor=self.alice, build=build)
        revisions = Revision.objects.count()
        live_revision = Page.objects.get(path="topics/pricing/price-list.md").current_revision_id
        promotion = build_promote(actor=self.victor, build=build)
        assert promotion.approved == [
            {"path": "topics/pricing/price-list.md", "action": "delete", "sha256": "", "revision": None,
             "previous": live_revision}
        ]  # fmt: skip
        with pytest.raises(Page.DoesNotExist):
            page_read(principal=self.bob, path="topics/pricing/price-list.md")
        assert Page.objects.get(path="topics/pricing/price-list.md").current_revision is None
        assert Revision.objects.count() == revisions

    def test_move_goes_live_at_the_new_path_only(self) -> None:
        build = build_open(actor=self.alice, title="Rename")
        build_move_page(build=build, path="topics/pricing/price-list.md", new_path="topics/pricing/plans.md")
        assert not Page.objects.filter(path="topics/pricing/plans.md").exists()
        build = build_submit(actor=self.alice, build=build)
        build_promote(actor=self.victor, build=build)
        moved = page_read(principal=self.bob, path="topics/pricing/plans.md")
        assert "Team plan." in moved.body
        with pytest.raises(Page.DoesNotExist):
            page_read(principal=self.bob, path="topics/pricing/price-list.md")

    def test_a_moved_page_keeps_its_history_and_not_a_later_pages_at_its_old_path(self) -> None:
        from builds.history import page_history

        old, new = "topics/pricing/price-list.md", "topics/pricing/plans.md"
        publish(old, title="Price list", body="# Price list\n\n## Plans\n\nTeam plan, 20 euros.\n")
        before = [entry.number for entry in page_history(principal=self.bob, path=old)[1]]
        assert len(before) == 2
        self.move(old, new)
        publish(old, title="Another list", body="# Another list\n\nSomething else.\n")  # the old path reused
        _, entries = page_history(principal=self.bob, path=new)
        assert [entry.number for entry in entries][1:] == before  # the move, then the old path's two
        self.client.force_login(self.bob.user)
        across = self.client.get(f"/pages/{new}/history", {"from": before[-1], "to": entries[0].number})
        assert across.status_code == 200
        assert "20 euros" in across.content.decode()
        assert f"at {old}, before a move" in across.content.decode()
        from memory.tokens import api_token_issue

        token = api_token_issue(actor=self.bob, name="history")[1]
        listed = self.client.get(f"/api/v1/pages/{new}/history", HTTP_AUTHORIZATION=f"Bearer {token}").json()
        assert [revision["path"] for revision in listed["revisions"]] == [new, old, old]
        # The page written at the old path afterwards has its own history only: the moved
        # page's two revisions went with it.
        assert [entry.revision.frontmatter["title"] for entry in page_history(principal=self.bob, path=old)[1]] == [
            "Another list"
        ]
        # A reader of the new path only sees no revision written at the old one.
        from grants.services import grant_issue, member_create

        carol = member_create(actor=SYSTEM, username="carol")
        grant_issue(actor=SYSTEM, member=carol, path=new, permission="read")
        assert [entry.number for entry in page_history(principal=carol, path=new)[1]] == [entries[0].number]

    def test_a_page_that_came_to_a_path_after_another_left_it_does_not_inherit_that_ones_history(self) -> None:
        from builds.history import page_history

        first, second, third = "topics/pricing/price-list.md", "topics/pricing/plans.md", "topics/pricing/tiers.md"
        self.move(first, second)  # the price list: first → second → third
        self.move(second, third)
        publish(second, title="Something else", body="# Something else\n\nUnrelated.\n")  # a new page at second
        self.move(second, "topics/pricing/elsewhere.md")  # ... which moves on too
        _, entries = page_history(principal=self.bob, path="topics/pricing/elsewhere.md")
        assert ["Something else" in entry.revision.body for entry in entries] == [True, True]  # its move and itself
        price_list = [entry.revision.path for entry in page_history(principal=self.bob, path=third)[1]]
        assert price_list == [third, second, first]

    def test_a_page_written_where_one_was_deleted_does_not_inherit_its_history(self) -> None:
        from builds.history import page_history

        path = "topics/pricing/price-list.md"
        build = build_open(actor=self.alice, title="Retire the price list")
        build_delete_page(build=build, path=path)
        build_promote(actor=self.victor, build=build_submit(actor=self.alice, build=build))
        publish(path, title="A new list", body="# A new list\n\nStarted afresh.\n")
        _, entries = page_history(principal=self.bob, path=path)
        assert [entry.revision.frontmatter["title"] for entry in entries] == ["A new list"]
        from memory.tokens import api_token_issue

        token = api_token_issue(actor=self.bob, name="history")[1]
        listed = self.client.get(f"/api/v1/pages/{path}/history", HTTP_AUTHORIZATION=f"Bearer {token}").json()
        assert [revision["number"] for revision in listed["revisions"]] == [entries[0].number]

    def test_a_page_moved_away_and_back_lists_each_revision_once(self) -> None:
        from builds.history import page_history

        old, new = "topics/pricing/price-list.md", "topics/pricing/plans.md"
        self.move(old, new)
        self.move(new, old)
        numbers = [entry.number for entry in page_history(principal=self.bob, path=old)[1]]
        assert len(numbers) == len(set(numbers)) == 3  # published, moved away, moved back
        assert numbers == sorted(numbers, reverse=True)

    def test_guards(self) -> None:
        bobs = build_open(actor=self.bob, title="Bob")
        with pytest.raises(PermissionDenied):
            build_delete_page(build=bobs, path="topics/pricing/price-list.md")
        with pytest.raises(Page.DoesNotExist):
            build_delete_page(build=bobs, path=DISCOUNT_POLICY)  # hidden from Bob: same as missing
        alices = build_open(actor=self.alice, title="Alice")
        with pytest.raises(ValidationError):
            build_move_page(build=alices, path="topics/pricing/price-list.md", new_path=DISCOUNT_POLICY)


class BranchDraftsTests(BranchChangeTests):
    def test_a_moved_page_keeps_its_figures_including_one_recorded_in_the_moving_build(self) -> None:
        """The figures stayed on the retired page row: the live value and one approved in the
        same build went out of every reader's reach."""
        import datetime as dt

        from builds.services import build_record_figure
        from corpus.models import Figure
        from corpus.selectors import figure_current, figure_history

        page = Page.objects.get(path="topics/pricing/price-list.md")
        Figure.objects.create(key="seats", value=10, as_of=dt.date(2026, 10, 1), page=page)
        build = build_open(actor=self.alice, title="Seats and a new home")
        build_record_figure(build=build, page_path="topics/pricing/price-list.md", key="seats", value="12",
                            unit="", as_of=dt.date(2026, 11, 1))  # fmt: skip
        build_move_page(build=build, path="topics/pricing/price-list.md", new_path="topics/pricing/prices.md")
        build_promote(actor=self.victor, build=build_submit(actor=self.alice, build=build))
        current = figure_current(principal=self.bob, key="seats")
        assert (int(current.value), current.page.path) == (12, "topics/pricing/prices.md")
        assert [int(f.value) for f in figure_history(principal=self.bob, key="seats")] == [12, 10]

    def test_captures_figures_and_links_are_drafts_until_promotion(self) -> None:
        import datetime as dt

        from builds.services import build_link_pages, build_record_capture, build_record_figure
        from corpus.models import Figure, Source
        from corpus.selectors import figure_current, page_relationships, source_get_visible

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.victor, path="captures/", permission="approve")
        grant_issue(actor=SYSTEM, member=self.bob, path="captures/", permission="read")
        publish("topics/pricing/renewals.md", title="Renewals")
        build = build_open(actor=self.alice, title="Sourced update")
        recorded = build_record_capture(
            build=build, key="tickets/sup-7", kind="ticket", title="SUP-7", text="Customer asks."
        )
        key = recorded.source.key
        assert re.fullmatch(r"tickets/sup-7-[0-9a-f]{6}", key)
        build_record_figure(
            build=build, page_path="topics/pricing/price-list.md", key="seat-price", value="12", unit="EUR",
            as_of=dt.date(2026, 11, 1),
        )  # fmt: skip
        build_link_pages(build=build, path="topics/pricing/price-list.md", target="topics/pricing/renewals.md")
        with pytest.raises(Source.DoesNotExist):
            source_get_visible(principal=self.bob, key=key)
        with pytest.raises(Figure.DoesNotExist):
            figure_current(principal=self.bob, key="seat-price")
        assert page_relationships(principal=self.bob, path="topics/pricing/price-list.md")["related"] == []

        build = build_submit(actor=self.alice, build=build)
        build_promote(actor=self.victor, build=build)
        assert source_get_visible(principal=self.bob, key=key).title == "SUP-7"
        assert figure_current(principal=self.bob, key="seat-price").unit == "EUR"
        related = page_relationships(principal=self.bob, path="topics/pricing/price-list.md")["related"]
        assert [item["path"] for item in related] == ["topics/pricing/renewals.md"]

    def test_capture_approval_is_a_blocker(self) -> None:
        from builds.selectors import build_promotion_blockers
        from builds.services import build_record_capture

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        build = build_open(actor=self.alice, title="Capture only")
        key = build_record_capture(build=build, key="tickets/sup-8", kind="ticket", title="SUP-8").source.key
        build = build_submit(actor=self.alice, build=build)
        # Victor cannot even read captures: the blocker names nothing.
        assert build_promotion_blockers(build=build, approver=self.victor) == [
            "the build changes pages you may not approve"
        ]
        grant_issue(actor=SYSTEM, member=self.victor, path="captures/", permission="read")
        assert build_promotion_blockers(build=build, approver=self.victor) == [
            f"capture:{key}: you do not hold approve on this capture"
        ]


class FigureScopeTests(BranchTestCase):
    """A figure's history in the export holds only values recorded where the reader could read."""

    def history(self, member: object, path: str, key: str) -> list[str]:
        import yaml

        from corpus.export import corpus_files, zip_stream
        from tests.corpus.test_export import unzip

        files = unzip(b"".join(zip_stream(corpus_files(member))))  # type: ignore[arg-type]
        return [entry["value"] for entry in yaml.safe_load(files["figures.yml"])[path][key]["history"]]

    def test_a_value_recorded_at_a_path_the_reader_cannot_read_stays_hidden_after_a_move(self) -> None:
        import datetime as dt

        from corpus.figures import figure_record

        hidden, open_path = "board/margins.md", "topics/pricing/margins.md"
        for path, permission in (("board/", "suggest"), ("board/", "approve")):
            grant_issue(actor=SYSTEM, member=self.alice if permission == "suggest" else self.victor, path=path,
                        permission=permission)  # fmt: skip
        grant_issue(actor=SYSTEM, member=self.alice, path="board/", permission="read")
        publish(hidden, title="Margins")
        figure_record(actor=SYSTEM, page_path=hidden, key="margin", value="31", as_of=dt.date(2026, 1, 1))
        self.move(hidden, open_path)
        figure_record(actor=SYSTEM, page_path=open_path, key="margin", value="28", as_of=dt.date(2026, 6, 1))
        assert self.history(self.bob, open_path, "margin") == ["28"]  # bob never could read board/
        assert self.history(self.alice, open_path, "margin") == ["31", "28"]

    def test_a_value_drafted_in_the_build_that_restricted_its_page_is_judged_as_it_went_live(self) -> None:
        import datetime as dt

        from builds.services import build_record_figure, build_write_page
        from tests.base import page_markdown

        path = "topics/pricing/price-list.md"
        for member in (self.alice, self.victor):  # they read (and may approve) it restricted
            grant_issue(actor=SYSTEM, member=member, path=path, permission="approve")
        build = build_open(actor=self.alice, title="Restrict and record")
        build_write_page(
            build=build,
            path=path,
            markdown=page_markdown(
                title="Price list", category="pricing", sensitivity="restricted", body="# Price list\n\nClosed.\n"
            ),
        )
        build_record_figure(build=build, page_path=path, key="floor", value="9", as_of=dt.date(2026, 2, 1))
        build_promote(actor=self.victor, build=build_submit(actor=self.alice, build=build))
        publish(path, title="Price list", body="# Price list\n\nOpen again.\n")  # reopened
        from corpus.figures import figure_record

        figure_record(actor=SYSTEM, page_path=path, key="floor", value="8", as_of=dt.date(2026, 3, 1))
        assert self.history(self.bob, path, "floor") == ["8"]  # 9 went live while bob could not read it
        assert self.history(self.alice, path, "floor") == ["9", "8"]
