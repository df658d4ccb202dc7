"""The home page weighs the builds awaiting review newest first and stops at the few it shows:
with 4,750 awaiting it weighed every one of them (and each of their changes) on each visit."""

from __future__ import annotations

import datetime as dt
from unittest import mock

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from builds import selectors
from builds.models import Build
from builds.selectors import build_list_awaiting_review
from builds.services import build_open, build_submit, build_write_page
from grants.models import Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from home.selectors import RECENT, home_for
from tests.base import BrainTestCase, page_markdown


class HomeAwaitingScaleTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.dora = member_create(actor=SYSTEM, username="dora")
        grant_issue(actor=SYSTEM, member=cls.dora, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.alice, path="topics/", permission="suggest")

    def submit(self, title: str, path: str, actor: Member) -> Build:
        build = build_open(actor=actor, title=title)
        build_write_page(build=build, path=path, markdown=page_markdown(owner="alice", title=title))
        return build_submit(actor=actor, build=build)

    def add_awaiting(self, start: int, count: int) -> None:
        for index in range(start, start + count):
            if index % 4 == 1:  # not alice's to approve
                self.submit(f"Other {index}", f"topics/other/h{index}.md", self.dora)
            elif index % 4 == 2:  # her own: listed apart, never as one to review
                self.submit(f"Own {index}", f"topics/pricing/h{index}.md", self.alice)
            else:
                self.submit(f"Build {index}", f"topics/pricing/h{index}.md", self.dora)

    def expected(self) -> list[Build]:
        """The home's list as it was computed: every approvable build, then the first few not hers."""
        return [
            build for build in build_list_awaiting_review(principal=self.alice) if build.requester_id != self.alice.pk
        ][:RECENT]

    def weigh(self) -> tuple[list[Build], int, int]:
        with (
            mock.patch.object(selectors, "builds_approvable_by", wraps=selectors.builds_approvable_by) as spy,
            CaptureQueriesContext(connection) as queries,
        ):
            to_review = home_for(self.alice).to_review
        weighed = sum(len(call.args[1]) for call in spy.call_args_list)
        return to_review, weighed, len(queries.captured_queries)

    def test_home_weighs_a_bounded_number_of_builds_however_many_await(self) -> None:
        self.add_awaiting(0, 16)
        few, _, queries_few = self.weigh()
        assert [build.pk for build in few] == [build.pk for build in self.expected()]
        self.add_awaiting(16, 40)
        many, weighed_many, queries_many = self.weigh()
        assert len(many) == RECENT
        assert [build.pk for build in many] == [build.pk for build in self.expected()]
        assert all(build.title.startswith("Build") for build in many)
        assert weighed_many <= 2 * RECENT  # the newest first, not all 56 awaiting
        assert queries_many == queries_few

    def test_an_old_build_is_still_found_when_the_newer_ones_are_not_theirs(self) -> None:
        old = self.submit("The old one", "topics/pricing/old.md", self.dora)
        Build.objects.filter(pk=old.pk).update(submitted_at=timezone.now() - dt.timedelta(days=30))
        for index in range(40):
            self.submit(f"Other {index}", f"topics/other/o{index}.md", self.dora)
        to_review, _, _ = self.weigh()
        assert [build.pk for build in to_review] == [old.pk]

    def test_the_home_page_still_lists_them(self) -> None:
        self.add_awaiting(0, 12)
        self.client.force_login(self.alice.user)
        html = self.client.get("/").content.decode()
        section = html.split("Awaiting your review", 1)[1].split("Your open builds", 1)[0]
        for build in self.expected():
            assert build.title in section
        assert "Other" not in section
        assert "Own" not in section
