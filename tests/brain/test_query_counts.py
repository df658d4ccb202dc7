"""Each web page's query count does not grow with what it lists (no N+1), asserted exactly."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from builds.driver import import_job_create, job_step
from builds.models import Build, BuildJob
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.services import memory_remember
from tests.base import BrainTestCase, page_markdown, publish


class ReviewerTestCase(BrainTestCase):
    """The personas, plus victor approving ``topics/`` and alice suggesting there."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor", email="victor@example.com")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=cls.alice, path="topics/", permission="suggest")


class QueryCountTests(ReviewerTestCase):
    def grow(self, start: int, count: int) -> None:
        for index in range(start, start + count):
            publish(
                f"topics/folder{index % 3}/page-{index}.md",
                title=f"Page {index}",
                owner="victor",
                as_of="2020-01-01",
                body=f"# Page {index}\n\nPricing notes {index}. See [page 0](../folder0/page-0.md).\n",
            )
            memory_remember(actor=self.victor, content=f"Remember number {index} for the pricing team.")
            if index:  # one more revision of the page whose history is read
                publish(
                    "topics/folder0/page-0.md", title="Page 0", owner="victor", body=f"# Page 0\n\nVersion {index}.\n"
                )
            build = import_job_create(
                requester=self.alice,
                files=[
                    (f"topics/folder{index % 3}/page-{index}.md", page_markdown(owner="victor", title=f"Page {index}"))
                ],
                title=f"Change {index}",
            )
            while job_step(BuildJob.objects.get(build=build).pk) == "progress":
                pass

    def pages(self) -> dict[str, str]:
        build = Build.objects.order_by("created_at").first()
        assert build is not None
        return {
            "home": "/",
            "browse": "/pages/",
            "page": "/pages/topics/folder0/page-0.md",
            "history": "/pages/topics/folder0/page-0.md/history",
            "search": "/search?q=pricing+notes",
            "review": f"/builds/{build.public_id}/",
            "reviews": "/builds/",
            "uploads": "/sources/",
        }

    def test_each_page_costs_the_same_queries_with_two_or_eight_of_everything(self) -> None:
        # Session, user and member lookups included: the whole request as a browser makes it. The
        # review's blockers read whether the drafts' owners are active in one query for them all;
        # home weighs each recent approval's revision as written (its rows, then one predicate);
        # home and the queue first ask whether the reader may approve anything at all (holds_any);
        # browse names the visible pages' owners in a query of its own; history asks whether
        # the page was moved to its path (its earlier homes' revisions are its history too);
        # uploads whether the reader may add captures at all (the form is offered only then);
        # the review, when its previews link to pages, which of them the reader may open.
        expected = {
            "home": 12, "browse": 4, "page": 4, "history": 5, "search": 6, "review": 7, "reviews": 7, "uploads": 4,
        }  # fmt: skip
        self.client.force_login(self.victor.user)
        for start, count in ((0, 2), (2, 6)):  # two, then eight pages, memories, builds and revisions
            self.grow(start, count)
            for name, url in self.pages().items():
                with self.subTest(page=name, items=start + count), self.assertNumQueries(expected[name]):
                    response = self.client.get(url)
                    assert response.status_code == 200, (url, response.status_code)


class ReviewQueryCountTests(ReviewerTestCase):
    def review_queries(self, files: int) -> int:
        for index in range(files):
            publish(f"topics/r{files}/p{index}.md", title=f"P{index}", owner="victor")
        build = import_job_create(
            requester=self.alice,
            files=[
                (f"topics/r{files}/p{index}.md", page_markdown(owner="victor", title=f"P{index}", body="# P\n\nNew.\n"))
                for index in range(files)
            ],
            title=f"Build of {files}",
        )
        while job_step(BuildJob.objects.get(build=build).pk) == "progress":
            pass
        self.client.force_login(self.victor.user)
        with CaptureQueriesContext(connection) as queries:
            assert self.client.get(f"/builds/{build.public_id}/").status_code == 200
        return len(queries)

    def test_the_review_screen_costs_the_same_with_one_or_six_changed_files(self) -> None:
        assert self.review_queries(1) == self.review_queries(6)
