"""Build pages cost the same however large the build or the review queue: no per-file work
repeated per file, no query per file, no weighing of every build awaiting anyone."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from unittest import mock

from django.contrib.auth.models import User
from django.db import connection
from django.test import TestCase, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from builds import selectors
from builds.models import Build
from builds.review import APPROVER_CHECK_LIMIT, Approvers, build_approvers
from builds.selectors import build_parts, build_summary, held_on, pages_at
from builds.services import (
    build_open,
    build_record_capture,
    build_record_figure,
    build_submit,
    build_write_page,
)
from grants.models import Group, GroupMembership, Member, Permission, Sensitivity, ServiceAccount
from grants.predicates import members_holding, members_holding_all
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import DISCOUNT_POLICY, BrainTestCase, page_markdown, publish


def _fresh(build: Build) -> Build:
    """The build as a request reads it: nothing cached on the instance."""
    return Build.objects.select_related("requester__user").get(pk=build.pk)


class ReadBranchScaleTests(BrainTestCase):
    """``build_summary`` (REST ``GET /api/v1/builds/<id>``, MCP ``read_branch``, ``GET /api/builds/<id>``)
    weighed every change's readability once per change: 2,000 changes took 31 s."""

    def build_with(self, count: int) -> Build:
        build = build_open(actor=self.alice, title=f"{count} pages")
        for index in range(count):
            build_write_page(
                build=build, path=f"topics/pricing/scale-{count}-{index}.md",
                markdown=page_markdown(owner="alice", title=f"Page {index}"),
            )  # fmt: skip
        return _fresh(build)

    def test_readable_changes_is_weighed_a_bounded_number_of_times_whatever_the_size(self) -> None:
        calls: dict[int, int] = {}
        for count in (2, 12):
            build = self.build_with(count)
            with mock.patch.object(selectors, "readable_changes", wraps=selectors.readable_changes) as spy:
                summary = build_summary(build=build, viewer=self.alice)
            assert len(summary["changes"]) == count  # type: ignore[arg-type]
            calls[count] = spy.call_count
        assert calls[2] == calls[12] <= 4, calls

    def test_the_web_json_weighs_it_a_bounded_number_of_times(self) -> None:
        self.client.force_login(self.alice.user)
        calls: dict[int, int] = {}
        for count in (2, 12):
            build = self.build_with(count)
            with mock.patch.object(selectors, "readable_changes", wraps=selectors.readable_changes) as spy:
                response = self.client.get(f"/api/builds/{build.public_id}")
            assert response.status_code == 200
            assert len(response.json()["changes"]) == count
            calls[count] = spy.call_count
        assert calls[2] == calls[12], calls

    def test_the_summary_still_lists_only_the_changes_the_viewer_may_read(self) -> None:
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted", title="Discounts")
        build = build_open(actor=self.alice, title="Two pages")
        build_write_page(build=build, path="topics/pricing/open.md", markdown=page_markdown(owner="alice"))
        build_write_page(
            build=build, path=DISCOUNT_POLICY,
            markdown=page_markdown(owner="alice", category="pricing", sensitivity="restricted", title="Discounts"),
        )  # fmt: skip
        build = build_submit(actor=self.alice, build=build)
        victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=victor, path="topics/", permission="approve")  # not the restricted page
        alice_sees = [change["path"] for change in build_summary(build=_fresh(build), viewer=self.alice)["changes"]]  # type: ignore[union-attr]
        victor_sees = [change["path"] for change in build_summary(build=_fresh(build), viewer=victor)["changes"]]  # type: ignore[union-attr]
        assert alice_sees == [DISCOUNT_POLICY, "topics/pricing/open.md"]
        assert victor_sees == ["topics/pricing/open.md"]


def _approvers_per_object(*, build: Build, requester: Member) -> Approvers:
    """``build_approvers`` as it was: one ``members_holding`` query per part, intersected —
    the reference the set-wise version must agree with."""
    from builds.services import builds_settings
    from corpus.services import document_from_revision

    candidates: set[int] | None = None
    owners: set[str] = set()

    def narrow(path: str, category: str | None, sensitivity: int) -> None:
        nonlocal candidates
        ids = members_holding(Permission.APPROVE, path=path, category=category, sensitivity=sensitivity)
        candidates = ids if candidates is None else candidates & ids

    parts = build_parts(build)
    pages = pages_at(build)
    live_rows = [page for page in pages.values() if page.current_revision_id is not None]
    held = held_on(requester, build, [(page.path, page.category, int(page.sensitivity)) for page in live_rows])
    readable_live = {page.path: page for page, best in zip(live_rows, held, strict=True) if best is not None}
    for change in parts.changes:
        live = readable_live.get(change.path)
        if live is not None:
            narrow(live.path, live.category, live.sensitivity)
            if live.change_policy == "owner" and live.owner.binds_as_owner:
                owners.add(live.owner.username)
        if change.revision is not None:
            document = document_from_revision(change.revision)
            narrow(document.path, document.category, document.sensitivity)
            existing = readable_live.get(document.path)
            owner_rule = document.change_policy == "owner" or (
                existing is not None and existing.change_policy == "owner"
            )
            if owner_rule and (existing is None or existing.owner.binds_as_owner):
                owners.add(existing.owner.username if existing is not None else document.owner)
    for recorded in parts.captures:
        source = recorded.source
        narrow(source.scope_path, source.category, source.sensitivity)
    for figure_draft in parts.figures:
        page = figure_draft.draft.page
        narrow(page.path, page.category, page.sensitivity)
        if page.change_policy == "owner" and page.owner.binds_as_owner:
            owners.add(page.owner.username)
    if not candidates or len(owners) > 1:
        return Approvers([], 0)
    members = Member.objects.filter(pk__in=candidates, is_active=True, user__is_active=True).select_related("user")
    if not builds_settings()["ALLOW_SELF_APPROVAL"]:
        members = members.exclude(pk=requester.pk)
    if owners:
        members = members.filter(user__username__in=owners)
    names = sorted(member.username for member in members)
    return Approvers(names[:APPROVER_CHECK_LIMIT], max(0, len(names) - APPROVER_CHECK_LIMIT))


ORDINARY, RESTRICTED, SECRET = int(Sensitivity.ORDINARY), int(Sensitivity.RESTRICTED), int(Sensitivity.SECRET)

# Objects the predicate weighs, chosen to hit each branch of the reach rule and its traps.
OBJECTS: list[tuple[str, str | None, int]] = [
    ("topics/pricing/price-list.md", None, ORDINARY),
    (DISCOUNT_POLICY, "pricing", RESTRICTED),  # exact path or category only
    ("topics/other/notes.md", None, ORDINARY),
    ("hr/salaries.md", "pricing", RESTRICTED),  # category only
    ("topics/pricing/vault.md", "pricing", SECRET),  # no grant reaches a secret
    ("topics/pricing/price-list.md", "pricing", ORDINARY),  # the same path with a category
    ("topicsx/trap.md", None, ORDINARY),  # "topics/" is no prefix of it
    ("topics", None, ORDINARY),  # nor of this
    ("hr/team/people.md", None, ORDINARY),
    ("topics/pricing/deep/er/page.md", None, RESTRICTED),  # prefixes never reach a restricted page
]


class ApproversSetWiseTests(TestCase):
    """``build_approvers`` (the requester's build page) asked ``members_holding`` once per part:
    2,000 files, 2,007 queries. ``members_holding_all`` answers for every part at once and must
    agree with the per-part intersection exactly."""

    @classmethod
    def setUpTestData(cls) -> None:
        def member(name: str) -> Member:
            return member_create(actor=SYSTEM, username=name, email=f"{name}@example.com")

        cls.rita = member("rita")  # the requester
        grant_issue(actor=SYSTEM, member=cls.rita, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.rita, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.rita, path="topics/pricing/", permission="approve")
        cls.ann = member("ann")
        grant_issue(actor=SYSTEM, member=cls.ann, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=cls.ann, path="captures/", permission="approve")
        reviewers = Group.objects.create(name="reviewers")
        grant_issue(actor=SYSTEM, group=reviewers, path="topics/pricing/", permission="approve")
        grant_issue(actor=SYSTEM, group=reviewers, path="captures/", permission="suggest")
        cls.ben = member("ben")
        GroupMembership.objects.create(group=reviewers, member=cls.ben)
        grant_issue(actor=SYSTEM, member=cls.ben, path="captures/", permission="approve")
        cls.cat = member("cat")
        grant_issue(actor=SYSTEM, member=cls.cat, category="pricing", permission="approve")
        cls.dan = member("dan")
        grant_issue(actor=SYSTEM, member=cls.dan, path=DISCOUNT_POLICY, permission="approve")
        grant_issue(actor=SYSTEM, member=cls.dan, path="topics/pricing/", permission="approve")
        cls.ivy = member("ivy")
        grant_issue(actor=SYSTEM, member=cls.ivy, path="", permission="approve")  # ordinary pages only
        cls.hal = member("hal")
        grant_issue(actor=SYSTEM, member=cls.hal, path="", permission="read")
        grant_issue(actor=SYSTEM, member=cls.hal, path="topics/", permission="suggest")
        pricing_team = Group.objects.create(name="pricing-team")
        grant_issue(actor=SYSTEM, group=pricing_team, category="pricing", permission="approve")
        grant_issue(actor=SYSTEM, group=pricing_team, path="topics/pricing/price-list.md", permission="approve")
        cls.kim = member("kim")
        GroupMembership.objects.create(group=pricing_team, member=cls.kim)
        grant_issue(actor=SYSTEM, member=cls.kim, path="hr/", permission="approve")
        grant_issue(actor=SYSTEM, member=cls.kim, path="topics/", permission="approve")
        cls.lee = member("lee")  # in both groups
        GroupMembership.objects.create(group=reviewers, member=cls.lee)
        GroupMembership.objects.create(group=pricing_team, member=cls.lee)
        # Those who hold approve everywhere but count for nothing: suspended, inactive user,
        # offboarded, a suspended group member, a service account, a group with no one in it.
        for name in ("eve", "fay", "gus", "jon"):
            setattr(cls, name, member(name))
            grant_issue(actor=SYSTEM, member=getattr(cls, name), path="", permission="approve")
            grant_issue(actor=SYSTEM, member=getattr(cls, name), category="pricing", permission="approve")
        GroupMembership.objects.create(group=reviewers, member=cls.jon)
        GroupMembership.objects.create(group=pricing_team, member=cls.jon)
        cls.owner_gone = member("olga")  # owns a page with the owner policy, then leaves
        grant_issue(actor=SYSTEM, member=cls.owner_gone, path="topics/", permission="approve")
        robot = ServiceAccount.objects.create(name="robot")
        grant_issue(actor=SYSTEM, service_account=robot, path="", permission="approve")
        grant_issue(actor=SYSTEM, group=Group.objects.create(name="nobody"), path="", permission="approve")

        publish("topics/pricing/price-list.md", title="Price list", owner="ann")
        publish("topics/pricing/owned.md", title="Owned", owner="ben", change_policy="owner")
        publish("topics/pricing/left.md", title="Left", owner="olga", change_policy="owner")
        publish("topics/other/plain.md", title="Plain", owner="ann")
        publish(DISCOUNT_POLICY, title="Discounts", owner="dan", category="pricing", sensitivity="restricted")
        publish("topics/pricing/dan-owned.md", title="Dan's", owner="dan", change_policy="owner")

        Member.objects.filter(pk__in=[cls.eve.pk, cls.jon.pk]).update(is_active=False)  # suspended
        User.objects.filter(pk=cls.fay.user_id).update(is_active=False)
        Member.objects.filter(pk__in=[cls.gus.pk, cls.owner_gone.pk]).update(
            is_active=False, offboarded_at=timezone.now()
        )

    def test_the_set_wise_answer_is_the_intersection_of_the_per_object_answers(self) -> None:
        subsets = [
            list(subset) for size in (1, 2, 3) for subset in itertools.combinations(OBJECTS, size)
        ] + [OBJECTS, OBJECTS + OBJECTS[:3]]  # fmt: skip
        nonempty = 0
        for permission in (Permission.READ, Permission.SUGGEST, Permission.APPROVE):
            per_object = {
                item: members_holding(permission, path=item[0], category=item[1], sensitivity=item[2])
                for item in OBJECTS
            }
            for subset in subsets:
                expected = set.intersection(*(per_object[item] for item in subset))
                assert members_holding_all(permission, subset) == expected, (permission, subset)
                nonempty += bool(expected)
        assert nonempty > 50  # the comparison is not between empty sets
        assert members_holding_all(Permission.APPROVE, []) == set()

    def build(self, *paths: str, owner: str = "ann", change_policy: str = "gate", **extra: object) -> Build:
        build = build_open(actor=self.rita, title="Mixed")
        for path in paths:
            build_write_page(
                build=build, path=path, markdown=page_markdown(owner=owner, change_policy=change_policy, title=path)
            )
        if extra.get("capture"):
            build_record_capture(build=build, key="calls/kickoff", kind="note", title="Kickoff", text="Notes.")
        if extra.get("figure"):
            build_record_figure(
                build=build, page_path=str(extra["figure"]), key="seats", value=12, unit="EUR",
                as_of=dt.date(2026, 11, 1),
            )  # fmt: skip
        return build_submit(actor=self.rita, build=build)

    def test_build_approvers_agrees_with_the_per_part_answer(self) -> None:
        builds = {
            "gate pages": self.build("topics/pricing/price-list.md", "topics/pricing/new.md"),
            "two folders": self.build("topics/pricing/new.md", "topics/other/plain.md"),
            "owner policy, owner active": self.build("topics/pricing/owned.md"),
            "owner policy, owner gone": self.build("topics/pricing/left.md"),
            "new page with the owner policy": self.build("topics/pricing/fresh.md", change_policy="owner"),
            "two owners": self.build("topics/pricing/owned.md", "topics/pricing/dan-owned.md"),
            "over a page the requester cannot read": self.build(DISCOUNT_POLICY),
            "capture and figure": self.build(
                "topics/pricing/new.md", capture=True, figure="topics/pricing/price-list.md"
            ),
            "figure on an owner page": self.build(figure="topics/pricing/owned.md"),
            "capture only": self.build(capture=True),
        }
        named = 0
        for self_approval in (False, True):
            with override_settings(BRAIN_BUILDS={"ALLOW_SELF_APPROVAL": self_approval}):
                for label, build in builds.items():
                    expected = _approvers_per_object(build=_fresh(build), requester=self.rita)
                    assert build_approvers(build=_fresh(build), requester=self.rita) == expected, label
                    named += len(expected.names)
        assert named > 10
        # Spot checks of what the rules say.
        gate = build_approvers(build=_fresh(builds["gate pages"]), requester=self.rita).names
        assert gate == ["ann", "ben", "dan", "ivy", "kim", "lee"]  # reviewers (ben, lee) approve topics/pricing/
        assert build_approvers(build=_fresh(builds["owner policy, owner active"]), requester=self.rita).names == ["ben"]
        assert "ann" in build_approvers(build=_fresh(builds["owner policy, owner gone"]), requester=self.rita).names
        assert build_approvers(build=_fresh(builds["two owners"]), requester=self.rita).names == []

    def test_build_approvers_costs_the_same_queries_whatever_the_number_of_files(self) -> None:
        counts: dict[int, int] = {}
        for count in (2, 15):
            build = self.build(*[f"topics/pricing/many-{count}-{index}.md" for index in range(count)],
                               capture=(count == 15))  # fmt: skip
            build = _fresh(build)
            build_parts(build), pages_at(build)  # read by the page's other selectors anyway
            with CaptureQueriesContext(connection) as queries:
                approvers = build_approvers(build=build, requester=self.rita)
            assert "ann" in approvers.names
            counts[count] = len(queries.captured_queries)
        assert counts[2] == counts[15] <= 4, counts

    def test_the_requesters_page_costs_the_same_queries_whatever_the_number_of_files(self) -> None:
        self.client.force_login(self.rita.user)
        counts: dict[int, int] = {}
        for count in (2, 15):
            build = self.build(*[f"topics/pricing/page-{count}-{index}.md" for index in range(count)])
            self.client.get(f"/builds/{build.public_id}/")  # warm (sessions, settings)
            with CaptureQueriesContext(connection) as queries:
                response = self.client.get(f"/builds/{build.public_id}/")
            assert response.status_code == 200
            assert "ann" in response.content.decode()
            counts[count] = len(queries.captured_queries)
        assert counts[2] == counts[15], counts


class ReviewPageWindowTests(BrainTestCase):
    """A build's page drew every change's diff and preview: a 2,000-file import was a 5 MB page.
    Its changes are now paged, the counts and the approval covering all of them."""

    def test_the_changes_are_paged_and_counted_whole(self) -> None:
        build = build_open(actor=self.alice, title="Big import")
        for index in range(7):
            markdown = page_markdown(owner="alice", title=f"Window {index}", body=f"# W\n\nBody {index}.\n")
            build_write_page(build=build, path=f"topics/pricing/window-{index}.md", markdown=markdown)
        self.client.force_login(self.alice.user)
        with mock.patch("builds.views.CHANGES_PER_PAGE", 3):
            first = self.client.get(f"/builds/{build.public_id}/").content.decode()
            assert first.count('<details class="change"') == 3
            assert "<strong>7</strong> new" in first  # counted whole
            assert "Changes 1–3 of 7" in first
            assert "approving approves all 7" in first
            assert 'href="?changes=2" rel="next"' in first
            last = self.client.get(f"/builds/{build.public_id}/", {"changes": "3"}).content.decode()
            assert last.count('<details class="change"') == 1
            assert "window-6.md" in last
            assert "window-0.md" not in last
            assert 'rel="next"' not in last
            for odd in ("99", "0", "-1", "x", "9" * 40):  # past the end, or not a page: a page still
                with self.subTest(changes=odd):
                    answer = self.client.get(f"/builds/{build.public_id}/", {"changes": odd})
                    assert answer.status_code == 200
                    assert answer.content.decode().count('<details class="change"') in (1, 3)


class ReviewQueuePagesTests(BrainTestCase):
    """``GET /builds/`` listed (and weighed) every build awaiting review: 4,750 of them, 2.1 s and
    966 KB. It now shows a page at a time, newest first, with a link to the older ones."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.dora = member_create(actor=SYSTEM, username="dora")
        grant_issue(actor=SYSTEM, member=cls.dora, path="topics/", permission="suggest")

    def submit(self, title: str, path: str, *, actor: Member | None = None) -> Build:
        build = build_open(actor=actor or self.dora, title=title)
        build_write_page(build=build, path=path, markdown=page_markdown(owner="alice", title=title))
        return build_submit(actor=actor or self.dora, build=build)

    def titles(self, html: str) -> list[str]:
        queue = html.split("Awaiting your review", 1)[1].split("Your builds", 1)[0]
        return re.findall(r"<strong>(Build \d+)</strong>", queue)

    def test_the_queue_shows_a_page_newest_first_and_links_to_the_older_ones(self) -> None:
        # 25 builds alice may approve, with builds she may not approve between them.
        for index in range(25):
            self.submit(f"Build {index}", f"topics/pricing/q{index}.md")
            if index % 5 == 0:
                self.submit(f"Other {index}", f"topics/other/q{index}.md")
        Build.objects.filter(title="Build 3").update(submitted_at=timezone.now() + dt.timedelta(days=1))
        expected = ["Build 3"] + [f"Build {index}" for index in range(24, -1, -1) if index != 3]
        self.client.force_login(self.alice.user)
        pages: list[list[str]] = []
        url: str | None = "/builds/"
        with mock.patch("builds.views.QUEUE_PAGE", 10):
            while url is not None:
                with mock.patch.object(selectors, "builds_approvable_by", wraps=selectors.builds_approvable_by) as spy:
                    response = self.client.get(url)
                assert response.status_code == 200
                html = response.content.decode()
                assert "Other" not in html
                # Never every build awaiting anyone (30 here): twice a page at first, then as needed.
                assert sum(len(call.args[1]) for call in spy.call_args_list) <= 20
                pages.append(self.titles(html))
                assert ("Newest" in html) == (len(pages) > 1)
                match = re.search(r'<a rel="next" href="([^"]+)"', html)
                url = match.group(1).replace("&amp;", "&") if match else None
        assert pages == [expected[:10], expected[10:20], expected[20:]]

    def test_a_cursor_from_someone_else_or_made_up_is_refused_alike(self) -> None:
        for index in range(22):
            self.submit(f"Build {index}", f"topics/pricing/r{index}.md")
        victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=victor, path="topics/", permission="approve")
        self.client.force_login(victor.user)
        theirs = re.search(r'<a rel="next" href="[^"]*cursor=([^"]+)"', self.client.get("/builds/").content.decode())
        assert theirs is not None
        self.client.force_login(self.alice.user)
        answers = [
            self.client.get("/builds/", {"cursor": value})
            for value in (theirs.group(1).replace("%3A", ":"), "nonsense", str(Build.objects.first().public_id))  # type: ignore[union-attr]
        ]
        assert [answer.status_code for answer in answers] == [400, 400, 400]
        assert all(b"not a position this list gave out" in answer.content for answer in answers)

    def test_an_empty_later_page_says_so(self) -> None:
        for index in range(21):
            self.submit(f"Build {index}", f"topics/pricing/e{index}.md")
        self.client.force_login(self.alice.user)
        html = self.client.get("/builds/").content.decode()
        match = re.search(r'<a rel="next" href="([^"]+)"', html)
        assert match is not None
        Build.objects.filter(title="Build 0").update(status=Build.Status.REJECTED)
        later = self.client.get(match.group(1).replace("&amp;", "&")).content.decode()
        assert "No older build awaits your review." in later

    def test_one_who_may_approve_nothing_weighs_no_build(self) -> None:
        for index in range(3):
            self.submit(f"Build {index}", f"topics/pricing/n{index}.md")
        self.client.force_login(self.bob.user)  # read on topics/, approve nowhere
        with mock.patch.object(selectors, "builds_approvable_by", wraps=selectors.builds_approvable_by) as weighed:
            assert "Build 0" not in self.client.get("/builds/").content.decode()
            self.client.get("/")
        weighed.assert_not_called()
        self.client.force_login(self.alice.user)  # approve on topics/pricing/: the builds are hers to review
        with mock.patch.object(selectors, "builds_approvable_by", wraps=selectors.builds_approvable_by) as weighed:
            assert "Build 0" in self.client.get("/builds/").content.decode()
        weighed.assert_called()
