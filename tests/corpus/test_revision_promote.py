"""Drafts are not live; only a person holding approve (and the owner, under 'owner') promotes."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError, transaction

from corpus.frontmatter import PageInvalid
from corpus.models import Chunk, Page, Revision
from corpus.services import revision_create, revision_promote
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue
from tests.base import BrainTestCase, page_markdown, publish


class RevisionCreateTests(BrainTestCase):
    def test_a_draft_is_not_live_and_not_visible(self) -> None:
        revision, stats = revision_create(actor=self.alice, path="topics/pricing/new.md", markdown=page_markdown())
        assert stats.total == 1
        assert stats.embedded == 1
        assert revision.page is None
        assert not revision.is_promoted
        assert not Page.objects.filter(path="topics/pricing/new.md").exists()
        assert not Revision.objects.visible_to(self.alice).filter(pk=revision.pk).exists()
        assert not Chunk.objects.visible_to(self.alice).exists()

    def test_suggest_is_needed_to_draft(self) -> None:
        with pytest.raises(PermissionDenied):
            revision_create(actor=self.bob, path="topics/x.md", markdown=page_markdown(owner="bob"))
        with pytest.raises(PermissionDenied):
            revision_create(actor=self.charlie, path="topics/x.md", markdown=page_markdown())

    def test_a_draft_may_not_move_a_page_out_of_reach(self) -> None:
        publish("topics/pricing/list.md")
        # Alice holds approve on topics/pricing/ by prefix; marking the page restricted would
        # put it beyond her prefix grant, so the write is refused.
        with pytest.raises(PermissionDenied):
            revision_create(
                actor=self.alice, path="topics/pricing/list.md", markdown=page_markdown(sensitivity="restricted")
            )

    def test_invalid_frontmatter_lists_every_problem(self) -> None:
        markdown = (
            "---\ntype: Topic\nowner: nobody\nstatus: live\nchange_policy: maybe\n"
            "as_of: yesterday\nbogus: 1\n---\n\n# T\n\ntext\n"
        )
        with pytest.raises(PageInvalid) as invalid:
            revision_create(actor=self.alice, path="topics/pricing/x.md", markdown=markdown)
        fields = {problem.field for problem in invalid.value.problems}
        assert {"type", "status", "change_policy", "as_of", "bogus"} <= fields

    def test_unknown_owner_and_missing_capture(self) -> None:
        markdown = page_markdown(owner="nobody", sources=["gdrive/missing"])
        with pytest.raises(PageInvalid) as invalid:
            revision_create(actor=self.alice, path="topics/pricing/x.md", markdown=markdown)
        messages = [str(p) for p in invalid.value.problems]
        assert "owner: 'nobody' is not an active member" in messages
        assert "sources: capture:gdrive/missing does not exist" in messages

    def test_nul_is_refused(self) -> None:
        with pytest.raises(PageInvalid, match="NUL"):
            revision_create(actor=self.alice, path="topics/pricing/x.md", markdown=page_markdown(body="# a\n\nb\x00c"))

    def test_a_page_too_long_or_of_too_many_sections_is_refused_before_it_is_chunked(self) -> None:
        """Each section is a chunk embedded as the page is written: 5 MB of one-line sections
        (the request body allows it) held the writing request for hours."""
        from django.test import override_settings

        sections = "".join(f"## Step {n}\n\nDo {n}.\n\n" for n in range(31))
        with override_settings(BRAIN_PAGE_MAX_HEADINGS=30), pytest.raises(PageInvalid, match="31 headings"):
            revision_create(actor=self.alice, path="topics/pricing/x.md", markdown=page_markdown(body=sections))
        with override_settings(BRAIN_PAGE_MAX_CHARS=2000), pytest.raises(PageInvalid, match="at most 2,000"):
            revision_create(actor=self.alice, path="topics/pricing/x.md",
                            markdown=page_markdown(body="# Long\n\n" + "word " * 500))  # fmt: skip
        assert not Revision.objects.filter(path="topics/pricing/x.md").exists()
        # At the limit it is written; a "#tag" or "#5" in text is no heading.
        with override_settings(BRAIN_PAGE_MAX_HEADINGS=32):
            body = sections + "#hashtag and #5 are words.\n"
            revision_create(actor=self.alice, path="topics/pricing/x.md", markdown=page_markdown(body=body))
        # Comments in a fenced block are code, not sections (the chunker reads them so too).
        with override_settings(BRAIN_PAGE_MAX_HEADINGS=2):
            script = "# Setup\n\n```sh\n" + "# step\necho ok\n" * 40 + "```\n\n~~~~\n# more\n~~~~\n"
            revision_create(actor=self.alice, path="topics/pricing/y.md", markdown=page_markdown(body=script))

    def test_revisions_and_chunks_are_immutable_in_the_database(self) -> None:
        revision, _ = revision_create(actor=self.alice, path="topics/pricing/new.md", markdown=page_markdown())
        with pytest.raises(DatabaseError), transaction.atomic():
            Revision.objects.filter(pk=revision.pk).update(body="edited")
        with pytest.raises(DatabaseError), transaction.atomic():
            Chunk.objects.update(body="edited")


class RevisionPromoteTests(BrainTestCase):
    def test_approve_holder_promotes_and_is_recorded(self) -> None:
        revision, _ = revision_create(actor=self.alice, path="topics/pricing/new.md", markdown=page_markdown())
        page = revision_promote(actor=self.alice, revision=revision)
        revision.refresh_from_db()
        assert page.current_revision == revision
        assert revision.promoted_by == self.alice
        assert revision.promoted_at is not None
        assert AuditEvent.objects.filter(action="page.promote", target=page.path, actor_label="alice").exists()
        with pytest.raises(ValidationError):
            revision_promote(actor=self.alice, revision=revision)

    def test_read_only_member_cannot_promote(self) -> None:
        revision, _ = revision_create(actor=self.alice, path="topics/pricing/new.md", markdown=page_markdown())
        with pytest.raises(PermissionDenied):
            revision_promote(actor=self.bob, revision=revision)
        with pytest.raises(PermissionDenied):
            revision_promote(actor=self.charlie, revision=revision)
        assert not Page.objects.filter(path="topics/pricing/new.md").exists()

    def test_owner_change_policy_only_the_owner_approves(self) -> None:
        grant_issue(actor=SYSTEM, member=self.bob, path="topics/pricing/", permission="approve")
        publish("topics/pricing/owned.md", owner="alice", change_policy="owner")
        revision, _ = revision_create(
            actor=self.bob,
            path="topics/pricing/owned.md",
            markdown=page_markdown(owner="alice", change_policy="owner", title="v2"),
        )
        with pytest.raises(PermissionDenied):
            revision_promote(actor=self.bob, revision=revision)
        page = revision_promote(actor=self.alice, revision=revision)
        assert page.title == "v2"

    def test_secret_pages_are_reached_by_no_grant(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/vault.md", permission="approve")
        grant_issue(actor=SYSTEM, member=self.alice, category="vault", permission="approve")
        publish("topics/vault.md", sensitivity="secret", category="vault")
        assert not Page.objects.visible_to(self.alice).filter(path="topics/vault.md").exists()
        with pytest.raises(PermissionDenied):
            revision_create(actor=self.alice, path="topics/vault.md", markdown=page_markdown(sensitivity="secret"))
