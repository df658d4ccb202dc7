"""A build can cite a capture it recorded itself: both go live together when a person approves."""

from __future__ import annotations

from builds.services import build_promote, build_record_capture, build_submit, build_write_page
from corpus.models import Page, Source
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import BrainTestCase, page_markdown


class BranchCaptureTests(BrainTestCase):
    def test_a_page_cites_a_capture_recorded_on_the_same_build(self) -> None:
        from builds.services import build_open

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        erin = member_create(actor=SYSTEM, username="erin", password="pw-erin-12345")
        grant_issue(actor=SYSTEM, member=erin, path="topics/pricing/", permission="approve")
        grant_issue(actor=SYSTEM, member=erin, path="captures/", permission="approve")
        build = build_open(actor=self.alice, title="New seat price")
        recorded = build_record_capture(build=build, key="calls/finance", kind="note", title="Finance call",
                                        text="Finance approved 14 EUR a seat.")  # fmt: skip
        key = recorded.source.key
        markdown = page_markdown(title="Seat price", sources=[key], body="# Seat price\n\n14 EUR a seat.\n")
        build_write_page(build=build, path="topics/pricing/seat-price.md", markdown=markdown)
        assert not Source.objects.get(key=key).is_live  # a draft until a person approves
        build_submit(actor=self.alice, build=build)
        build_promote(actor=erin, build=build, note="Approved by finance")
        page = Page.objects.select_related("current_revision").get(path="topics/pricing/seat-price.md")
        assert page.current_revision.frontmatter["sources"] == [f"capture:{key}"]  # type: ignore[union-attr]
        assert Source.objects.get(key=key).is_live
        # What was approved stays visible after promotion, with no stale blockers.
        from builds.selectors import build_summary

        build.refresh_from_db()
        summary = build_summary(build=build, viewer=erin)
        assert summary["blockers"] == []
        promotion: dict[str, object] = summary["promotion"]  # type: ignore[assignment]
        assert promotion["approver"] == "erin"
        assert promotion["note"] == "Approved by finance"
        assert [c["path"] for c in promotion["changes"]] == ["topics/pricing/seat-price.md"]  # type: ignore[attr-defined]
        self.client.force_login(self.alice.user)
        api = self.client.get(f"/api/builds/{build.public_id}").json()
        assert api["promotion"]["changes"][0]["sha256"]

    def test_a_capture_of_another_build_is_still_unknown(self) -> None:
        import pytest

        from builds.services import build_open
        from corpus.frontmatter import PageInvalid

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        other = build_open(actor=self.alice, title="Other")
        key = build_record_capture(build=other, key="calls/x", kind="note", title="X", text="x").source.key
        build = build_open(actor=self.alice, title="This one")
        markdown = page_markdown(title="Seat price", sources=[key])
        with pytest.raises(PageInvalid, match="does not exist"):
            build_write_page(build=build, path="topics/pricing/seat-price.md", markdown=markdown)


class MoveKeepsDraftTests(BrainTestCase):
    def test_moving_a_page_keeps_the_edits_drafted_on_the_build(self) -> None:
        from brain.callers import BUILD, Caller
        from builds.services import build_move_page, build_open
        from mcp_api.tools.branch import read_draft
        from mcp_api.tools.corpus import PathArgs
        from tests.base import publish

        publish("topics/pricing/old.md", title="Old", body="# Old\n\nLive text.\n")
        build = build_open(actor=self.alice, title="Rename and edit")
        edited = page_markdown(title="Old", body="# Old\n\nEdited on the branch.\n")
        build_write_page(build=build, path="topics/pricing/old.md", markdown=edited)
        build_move_page(build=build, path="topics/pricing/old.md", new_path="topics/pricing/new.md")
        caller = Caller(principal=self.alice, kind=BUILD, build=build)
        at_new_path = read_draft(caller, PathArgs(path="topics/pricing/new.md"))
        assert "Edited on the branch." in at_new_path.body
        assert at_new_path.action == "move"
        assert "Edited on the branch." in read_draft(caller, PathArgs(path="topics/pricing/old.md")).body


class FigureOnANewPageTests(BrainTestCase):
    def setUp(self) -> None:
        from builds.services import build_open

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        self.erin = member_create(actor=SYSTEM, username="erin", password="pw-erin-12345")
        grant_issue(actor=SYSTEM, member=self.erin, path="topics/pricing/", permission="approve")
        grant_issue(actor=SYSTEM, member=self.erin, path="captures/", permission="approve")
        self.build = build_open(actor=self.alice, title="Seat price page")

    def test_a_figure_on_a_page_new_in_the_same_build_goes_live_with_it(self) -> None:
        import datetime as dt

        from builds.selectors import build_summary
        from builds.services import build_record_figure
        from corpus.models import Figure

        key = build_record_capture(build=self.build, key="calls/finance", kind="note", title="Finance call",
                                   text="Finance approved 14 EUR a seat.").source.key  # fmt: skip
        path = "topics/pricing/seat-price.md"
        build_write_page(build=self.build, path=path, markdown=page_markdown(title="Seat price", sources=[key]))
        build_record_figure(build=self.build, page_path=path, key="seat-price", value="14", unit="EUR",
                            as_of=dt.date(2026, 12, 1), source_key=key)  # fmt: skip
        assert not Figure.objects.filter(key="seat-price").exists()  # nothing anyone can read yet
        assert build_summary(build=self.build, viewer=self.erin)["figures"] == ["seat-price"]
        self.client.force_login(self.erin.user)
        review = self.client.get(f"/builds/{self.build.public_id}/").content.decode()
        assert "seat-price = 14 EUR" in review
        assert "new page" in review
        build_submit(actor=self.alice, build=self.build)
        build_promote(actor=self.erin, build=self.build)
        figure = Figure.objects.select_related("page", "source").get(key="seat-price")
        assert figure.is_live
        assert figure.page.path == path
        assert figure.source.key == key
        assert figure.value == 14
        assert figure.recorded_by == self.alice

    def test_a_figure_needs_the_page_live_or_written_on_this_branch(self) -> None:
        import datetime as dt

        import pytest

        from builds.services import build_record_figure

        with pytest.raises(Page.DoesNotExist):
            build_record_figure(build=self.build, page_path="topics/pricing/nowhere.md", key="x", value=1,
                                as_of=dt.date(2026, 12, 1))  # fmt: skip

    def test_a_bad_value_on_a_new_page_is_named(self) -> None:
        import datetime as dt

        import pytest
        from django.core.exceptions import ValidationError

        from builds.services import build_record_figure

        path = "topics/pricing/seat-price.md"
        build_write_page(build=self.build, path=path, markdown=page_markdown(title="Seat price"))
        with pytest.raises(ValidationError) as caught:
            build_record_figure(build=self.build, page_path=path, key="Bad Key", value="NaN", as_of=dt.date(2026, 1, 1))
        assert set(caught.value.message_dict) == {"key", "value"}

    def test_a_value_beyond_what_a_figure_keeps_is_named_and_the_rest_rounded(self) -> None:
        import datetime as dt

        import pytest
        from django.core.exceptions import ValidationError

        from builds.services import build_record_figure
        from corpus.figures import figure_record
        from corpus.models import Figure

        path = "topics/pricing/seat-price.md"
        build_write_page(build=self.build, path=path, markdown=page_markdown(title="Seat price"))
        # Held for a page new in this build, a value too large once broke the approver's promotion.
        for value in ("1" * 30, "1E+999999", "-1E18", "999999999999999999.9999999"):
            with pytest.raises(ValidationError, match="less than 10\\^18") as caught:
                build_record_figure(build=self.build, page_path=path, key="arr", value=value, as_of=dt.date(2026, 1, 1))
            assert set(caught.value.message_dict) == {"value"}
        build_record_figure(build=self.build, page_path=path, key="tiny", value="1E-999999", as_of=dt.date(2026, 1, 1))
        build_record_figure(build=self.build, page_path=path, key="rate", value=0.1 + 0.2, as_of=dt.date(2026, 1, 1))
        build_record_figure(build=self.build, page_path=path, key="big", value="999999999999999999.25",
                            as_of=dt.date(2026, 1, 1))  # fmt: skip
        build_submit(actor=self.alice, build=self.build)
        build_promote(actor=self.erin, build=self.build)
        values = dict(Figure.objects.filter(page__path=path).values_list("key", "value"))
        assert {key: str(value) for key, value in values.items()} == {
            "tiny": "0.000000", "rate": "0.300000", "big": "999999999999999999.250000",
        }  # fmt: skip
        # On a live page too: a clear error, not a database error.
        grant_issue(actor=SYSTEM, member=self.alice, path=path, permission="suggest")
        with pytest.raises(ValidationError, match="less than 10\\^18"):
            figure_record(actor=self.alice, page_path=path, key="arr", value="1" * 30, as_of=dt.date(2026, 1, 1))
