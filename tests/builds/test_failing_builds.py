"""Builds that cannot go on say so; builds of captures or figures alone have reviewers."""

from __future__ import annotations

import datetime as dt

from django.test import override_settings

from builds.driver import import_job_create, job_step
from builds.models import Build, BuildJob
from builds.selectors import build_get_visible, build_list_awaiting_review, build_promotion_blockers
from builds.services import build_open, build_promote, build_record_capture, build_record_figure, build_submit
from corpus.models import Source
from grants.models import Grant
from grants.principals import SYSTEM
from grants.services import grant_issue, grant_revoke, member_create
from tests.base import BrainTestCase, page_markdown, publish


class FailingImportTests(BrainTestCase):
    def setUp(self) -> None:
        self.dora = member_create(actor=SYSTEM, username="dora")
        self.grant = grant_issue(actor=SYSTEM, member=self.dora, path="topics/imports/", permission="suggest")

    def import_build(self, pages: int = 4) -> Build:
        files = [(f"topics/imports/p-{n}.md", page_markdown(owner="dora", title=f"P {n}")) for n in range(pages)]
        with self.captureOnCommitCallbacks(execute=False):
            return import_job_create(requester=self.dora, files=files, title="Import")

    @override_settings(BRAIN_BUILD_DRIVER={"BATCH_SIZE": 2})
    def test_an_import_still_drafting_cannot_be_submitted(self) -> None:
        """Submitted mid-import, a reviewer promoted the first drafts and the rest were dropped."""
        from django.core.exceptions import ValidationError

        build = self.import_build()
        job = BuildJob.objects.get(build=build)
        with self.captureOnCommitCallbacks(execute=False):
            assert job_step(job.pk) == "progress"
        with self.assertRaisesMessage(ValidationError, "still drafting"):
            build_submit(actor=self.dora, build=build)
        with self.captureOnCommitCallbacks(execute=False):
            while job_step(job.pk) == "progress":
                pass
        build.refresh_from_db()
        assert build.changes.count() == 4

    @override_settings(BRAIN_BUILD_DRIVER={"BATCH_SIZE": 2})
    def test_a_grant_revoked_mid_import_fails_the_build_with_the_reason(self) -> None:
        build = self.import_build()
        job = BuildJob.objects.get(build=build)
        with self.captureOnCommitCallbacks(execute=False):
            assert job_step(job.pk) == "progress"
        grant_revoke(actor=SYSTEM, grant=Grant.objects.get(pk=self.grant.pk))
        with self.captureOnCommitCallbacks(execute=False):
            assert job_step(job.pk) == "failed"
        build.refresh_from_db()
        job.refresh_from_db()
        assert build.status == Build.Status.FAILED
        assert job.state == BuildJob.State.FAILED
        assert "can no longer be drafted" in job.error
        # Nothing retries it: the next step (a sweep's message) finds it finished.
        assert job_step(job.pk) == "busy"

    def test_a_step_that_keeps_failing_stops_and_says_so(self) -> None:
        build = self.import_build()
        job = BuildJob.objects.get(build=build)
        BuildJob.objects.filter(pk=job.pk).update(attempts=11, steps_done=0)
        assert job_step(job.pk) == "failed"
        job.refresh_from_db()
        assert "failed 10 times" in job.error
        assert Build.objects.get(pk=build.pk).status == Build.Status.FAILED


class CaptureOnlyBuildTests(BrainTestCase):
    def setUp(self) -> None:
        self.dora = member_create(actor=SYSTEM, username="dora")
        self.erin = member_create(actor=SYSTEM, username="erin")
        grant_issue(actor=SYSTEM, member=self.dora, path="captures/calls/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.erin, path="captures/calls/", permission="approve")

    def test_the_capture_approver_sees_reviews_and_promotes_it(self) -> None:
        build = build_open(actor=self.dora, title="Call notes")
        key = build_record_capture(
            build=build, key="calls/kickoff", kind="note", title="Kickoff", text="Notes."
        ).source.key
        build = build_submit(actor=self.dora, build=build)
        assert build_get_visible(principal=self.erin, public_id=build.public_id) == build
        assert build in build_list_awaiting_review(principal=self.erin)
        assert build_promotion_blockers(build=build, approver=self.erin) == []
        build_promote(actor=self.erin, build=build, note="ok")
        assert Source.objects.get(key=key).is_live
        # Someone without approve on the capture still sees nothing of it.
        assert build not in build_list_awaiting_review(principal=self.bob)

    def test_a_figure_only_build_is_reviewed_by_the_pages_approver(self) -> None:
        publish("topics/pricing/price-list.md", title="Price list")
        grant_issue(actor=SYSTEM, member=self.dora, path="topics/pricing/", permission="suggest")
        build = build_open(actor=self.dora, title="ARR")
        build_record_figure(
            build=build, page_path="topics/pricing/price-list.md", key="arr", value=12, unit="EUR",
            as_of=dt.date(2026, 11, 1),
        )  # fmt: skip
        build = build_submit(actor=self.dora, build=build)
        # Alice holds approve on topics/pricing/.
        assert build in build_list_awaiting_review(principal=self.alice)
        assert build_promotion_blockers(build=build, approver=self.alice) == []
