"""Builds: drafts stay private, credentials die with their build, promotion is gated and atomic."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any
from unittest import mock

import pytest
from django.core.exceptions import PermissionDenied
from django.test import override_settings
from django.utils import timezone

from builds.models import Build, BuildCredential
from builds.selectors import build_get_visible, build_promotion_blockers
from builds.services import (
    CredentialInvalid,
    PromotionBlocked,
    build_cancel,
    build_credential_issue,
    build_credential_resolve,
    build_open,
    build_promote,
    build_reject,
    build_submit,
    build_write_page,
)
from corpus.frontmatter import PageInvalid, Problem
from corpus.models import Chunk, Page
from corpus.search import search
from corpus.selectors import page_find, page_read
from grants.models import Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create, member_update
from tests.base import DISCOUNT_POLICY, BrainTestCase, capture, page_markdown, publish


class BuildTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=cls.victor, path=DISCOUNT_POLICY, permission="approve")
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\n## Plans\n\nTeam plan.\n")

    def draft(self, *paths: str, owner: str = "alice", change_policy: str = "gate") -> Build:
        build = build_open(actor=self.alice, title="Update pricing")
        for path in paths:
            build_write_page(
                build=build,
                path=path,
                markdown=page_markdown(owner=owner, change_policy=change_policy, title=f"New {path}",
                                       body=f"# New\n\n## Body\n\nZebra quokka text for {path}.\n"),
            )  # fmt: skip
        return build

    def test_a_draft_never_shows_through_reads_or_search(self) -> None:
        def observe() -> tuple:
            return (
                page_read(principal=self.bob, path="topics/pricing/price-list.md"),
                [p.path for p in page_find(principal=self.bob)],
                [r.path for r in search(principal=self.bob, query="zebra quokka").results],
                [r.path for r in search(principal=self.victor, query="zebra quokka").results],
            )

        before = observe()
        self.draft("topics/pricing/price-list.md", "topics/pricing/new-page.md")
        assert observe() == before
        assert not Page.objects.filter(path="topics/pricing/new-page.md").exists()
        assert not Chunk.objects.visible_to(self.victor).filter(body__contains="Zebra").exists()

    def test_requester_needs_suggest(self) -> None:
        build = build_open(actor=self.bob, title="Bob tries")
        with pytest.raises(PermissionDenied):
            build_write_page(build=build, path="topics/pricing/x.md", markdown=page_markdown(owner="bob"))

    def test_promotion_by_an_approver_goes_live_and_is_recorded(self) -> None:
        build = self.draft("topics/pricing/price-list.md", "topics/pricing/new-page.md")
        build = build_submit(actor=self.alice, build=build)
        assert build_promotion_blockers(build=build, approver=self.victor) == []
        promotion = build_promote(actor=self.victor, build=build, note="looks right")
        assert promotion.approver == self.victor
        assert promotion.note == "looks right"
        assert [item["path"] for item in promotion.approved] == [
            "topics/pricing/new-page.md",
            "topics/pricing/price-list.md",
        ]
        assert Page.objects.get(path="topics/pricing/price-list.md").title == "New topics/pricing/price-list.md"
        build.refresh_from_db()
        assert build.status == Build.Status.PROMOTED

    def test_blockers(self) -> None:
        build = self.draft("topics/pricing/price-list.md")
        assert any("not awaiting review" in b for b in build_promotion_blockers(build=build, approver=self.victor))
        build = build_submit(actor=self.alice, build=build)
        assert "the requester cannot approve their own build" in build_promotion_blockers(
            build=build, approver=self.alice
        )
        assert build_promotion_blockers(build=build, approver=self.bob) == [
            "topics/pricing/price-list.md: you do not hold approve on this page"
        ]
        with pytest.raises(PromotionBlocked):
            build_promote(actor=self.bob, build=build)
        with override_settings(BRAIN_BUILDS={"ALLOW_SELF_APPROVAL": True}):
            assert build_promotion_blockers(build=build, approver=self.alice) == []

    def test_owner_policy_blocker(self) -> None:
        build = self.draft("topics/pricing/owned.md", owner="alice", change_policy="owner")
        build = build_submit(actor=self.alice, build=build)
        assert build_promotion_blockers(build=build, approver=self.victor) == [
            "topics/pricing/owned.md: only its owner (alice) may approve it (change policy 'owner')"
        ]

    def test_an_owner_who_left_no_longer_binds_their_pages(self) -> None:
        """A page with change policy 'owner' whose owner was offboarded could never be changed
        or handed on: only they could approve it. It now falls back to its approve holders."""
        from accounts.services import member_offboard
        from builds.review import build_approvers
        from builds.selectors import build_list_awaiting_review

        publish("topics/pricing/owned.md", owner="bob", change_policy="owner", title="Owned")
        build = build_submit(actor=self.alice, build=self.draft("topics/pricing/owned.md", owner="alice"))
        assert build_promotion_blockers(build=build, approver=self.victor) == [
            "topics/pricing/owned.md: only its owner (bob) may approve it (change policy 'owner')"
        ]
        assert build_approvers(build=build, requester=self.alice).names == []
        member_offboard(actor=SYSTEM, member=self.bob, send_export=False)
        build = Build.objects.get(pk=build.pk)
        assert build_promotion_blockers(build=build, approver=self.victor) == []
        assert "victor" in build_approvers(build=build, requester=self.alice).names
        assert build.pk in [b.pk for b in build_list_awaiting_review(principal=self.victor)]
        build_promote(actor=self.victor, build=build)
        assert Page.objects.get(path="topics/pricing/owned.md").owner.username == "alice"

    def test_the_approvers_named_can_read_what_the_build_newly_cites(self) -> None:
        """The requester was told "victor can approve", and victor's approval was blocked: the
        draft cites a capture he cannot read."""
        from builds.review import build_approvers

        capture("gdrive/msa", title="MSA")
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/gdrive/", permission="read")
        dana = member_create(actor=SYSTEM, username="dana")
        grant_issue(actor=SYSTEM, member=dana, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=dana, path="captures/gdrive/", permission="read")
        build = build_open(actor=self.alice, title="Renewals")
        build_write_page(
            build=build, path="topics/pricing/renewals.md",
            markdown=page_markdown(title="Renewals", sources=["gdrive/msa"]),
        )  # fmt: skip
        build = build_submit(actor=self.alice, build=build)
        assert build_promotion_blockers(build=build, approver=self.victor) == [
            "topics/pricing/renewals.md: it adds citations of pages or captures you cannot read; "
            "someone who can must approve it"
        ]
        assert build_promotion_blockers(build=build, approver=dana) == []
        assert build_approvers(build=build, requester=self.alice).names == ["dana"]

    def test_restricted_page_needs_a_grant_naming_it(self) -> None:
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted")
        dana = member_create(actor=SYSTEM, username="dana")
        grant_issue(actor=SYSTEM, member=dana, path="topics/", permission="approve")  # prefix only
        build = build_open(actor=self.alice, title="Discounts")
        build_write_page(
            build=build, path=DISCOUNT_POLICY, markdown=page_markdown(category="pricing", sensitivity="restricted")
        )
        build = build_submit(actor=self.alice, build=build)
        # A prefix grant does not reach the restricted page, so Dana cannot even read it: the
        # blocker says so without naming it.
        assert build_promotion_blockers(build=build, approver=dana) == ["the build changes pages you may not approve"]
        assert build_promotion_blockers(build=build, approver=self.victor) == []

    def test_promotion_is_all_or_nothing(self) -> None:
        dana = member_create(actor=SYSTEM, username="dana")
        build = build_open(actor=self.alice, title="Two pages")
        build_write_page(build=build, path="topics/pricing/a-first.md", markdown=page_markdown(title="First"))
        build_write_page(
            build=build, path="topics/pricing/z-last.md", markdown=page_markdown(owner="dana", title="Last")
        )
        build = build_submit(actor=self.alice, build=build)
        # The last page's owner leaves after drafting: the review says so before anyone approves.
        member_update(actor=SYSTEM, member=dana, role="member", is_active=False, slack_user_id=None)
        with pytest.raises(PromotionBlocked, match=r"z-last.md: its owner \(dana\) is not an active member"):
            build_promote(actor=self.victor, build=build)
        member_update(actor=SYSTEM, member=dana, role="member", is_active=True, slack_user_id=None)
        # A page failing mid-way (the first one already written) leaves every page as it was.
        from builds import services as build_services

        real = build_services.revision_promote

        def failing_on_the_last(*, actor: Any, revision: Any) -> Any:
            if revision.path.endswith("z-last.md"):
                raise PageInvalid([Problem("owner", "'dana' is not an active member")])
            return real(actor=actor, revision=revision)

        with (
            mock.patch.object(build_services, "revision_promote", failing_on_the_last),
            pytest.raises(PageInvalid, match="not an active member"),
        ):
            build_promote(actor=self.victor, build=build)
        assert not Page.objects.filter(path__in=["topics/pricing/a-first.md", "topics/pricing/z-last.md"]).exists()
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW

    def test_reject_and_cancel_end_the_build(self) -> None:
        build = self.draft("topics/pricing/price-list.md")
        build = build_submit(actor=self.alice, build=build)
        with pytest.raises(PermissionDenied):
            build_reject(actor=self.bob, build=build, note="not mine")
        assert build_reject(actor=self.victor, build=build, note="no").status == Build.Status.REJECTED
        other = self.draft("topics/pricing/other.md")
        assert build_cancel(actor=self.alice, build=other).status == Build.Status.CANCELLED


class BuildCredentialTests(BuildTests):
    def test_credential_resolves_to_its_build_only_while_valid(self) -> None:
        build = build_open(actor=self.alice, title="Agent work")
        credential, token = build_credential_issue(actor=self.alice, build=build)
        assert build_credential_resolve(token) == build
        assert credential.token_hash not in token
        assert token not in credential.token_hash
        for bad in ("", "bld_nope", token[:-1] + ("A" if token[-1] != "A" else "B"), "not-a-token"):
            with pytest.raises(CredentialInvalid):
                build_credential_resolve(bad)

    def test_expired_credential_fails(self) -> None:
        build = build_open(actor=self.alice, title="Agent work")
        credential, token = build_credential_issue(actor=self.alice, build=build)
        BuildCredential.objects.filter(pk=credential.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        with pytest.raises(CredentialInvalid, match="not valid"):
            build_credential_resolve(token)

    def test_credential_dies_when_the_build_terminates(self) -> None:
        build = build_open(actor=self.alice, title="Agent work")
        _, token = build_credential_issue(actor=self.alice, build=build)
        build_cancel(actor=self.alice, build=build)
        assert BuildCredential.objects.get(build=build).revoked_at is not None
        with pytest.raises(CredentialInvalid, match="not valid"):
            build_credential_resolve(token)

    def test_submitted_build_credential_no_longer_writes(self) -> None:
        build = self.draft("topics/pricing/price-list.md")
        _, token = build_credential_issue(actor=self.alice, build=build)
        build = build_submit(actor=self.alice, build=build)
        with pytest.raises(CredentialInvalid):
            build_credential_resolve(token)

    def test_only_the_requester_issues_credentials(self) -> None:
        build = build_open(actor=self.alice, title="Agent work")
        with pytest.raises(PermissionDenied):
            build_credential_issue(actor=self.victor, build=build)


class BuildPrivacyTests(BuildTests):
    def test_non_participant_sees_the_same_as_a_missing_build(self) -> None:
        build = self.draft("topics/pricing/price-list.md")
        assert build_get_visible(principal=self.alice, public_id=build.public_id) == build
        assert build_get_visible(principal=self.victor, public_id=build.public_id) == build
        errors = []
        for public_id in (build.public_id, uuid.uuid4(), "not-a-uuid"):
            with pytest.raises(Build.DoesNotExist) as missing:
                build_get_visible(principal=self.bob, public_id=public_id)
            errors.append(str(missing.value))
        assert len(set(errors)) == 1
        with pytest.raises(Build.DoesNotExist):
            build_get_visible(principal=self.charlie, public_id=build.public_id)
        assert Member.objects.filter(user__username="charlie").exists()
