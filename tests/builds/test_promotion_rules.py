"""What a promotion may not do behind its approver's back: lose an approved edit, carry away or
bring back a page changed since, let two changes fight over one path, or make live what the
approver could not read."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest
from django.db import connection
from django.test import TransactionTestCase

import builds.services as build_services
from builds.models import Build
from builds.selectors import build_promotion_blockers
from builds.services import (
    PromotionBlocked,
    build_delete_page,
    build_move_page,
    build_open,
    build_promote,
    build_submit,
    build_write_page,
)
from corpus.models import Page, Revision
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import BrainTestCase, capture, page_markdown, publish


def _submitted(author: Any, title: str, *writes: tuple[str, str]) -> Build:
    build = build_open(actor=author, title=title)
    for path, body in writes:
        build_write_page(build=build, path=path, markdown=page_markdown(title="P", body=f"# P\n\n{body}\n"))
    return build_submit(actor=author, build=build)


class ConcurrentPromotionTests(TransactionTestCase):
    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice")
        self.bob = member_create(actor=SYSTEM, username="bob")
        self.v1 = member_create(actor=SYSTEM, username="v1")
        self.v2 = member_create(actor=SYSTEM, username="v2")
        for member in (self.alice, self.bob):
            grant_issue(actor=SYSTEM, member=member, path="topics/", permission="suggest")
        for member in (self.v1, self.v2):
            grant_issue(actor=SYSTEM, member=member, path="topics/", permission="approve")
        publish("topics/p.md", title="P", body="# P\n\noriginal\n")

    def test_two_approvers_promoting_two_edits_of_one_page_at_once_lose_neither(self) -> None:
        x = _submitted(self.alice, "x", ("topics/p.md", "ALICE EDIT"))
        y = _submitted(self.bob, "y", ("topics/p.md", "BOB EDIT"))
        # Each promotion, once past its blockers, waits (up to 3 s) for the other to be past its
        # own: without serialisation both pass the stale-draft check, then both write.
        arrived = threading.Barrier(2, timeout=3)
        real = build_services.build_promotion_blockers

        def blockers_then_wait(**kwargs: Any) -> list[str]:
            found = real(**kwargs)
            with contextlib.suppress(threading.BrokenBarrierError):
                arrived.wait()
            return found

        outcomes: dict[str, str] = {}

        def promote(name: str, approver: Any, build: Build) -> None:
            try:
                build_promote(actor=approver, build=build)
                outcomes[name] = "promoted"
            except PromotionBlocked as blocked:
                outcomes[name] = "; ".join(blocked.blockers)
            finally:
                connection.close()

        build_services.build_promotion_blockers = blockers_then_wait  # type: ignore[assignment]
        try:
            threads = [
                threading.Thread(target=promote, args=("x", self.v1, x)),
                threading.Thread(target=promote, args=("y", self.v2, y)),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
        finally:
            build_services.build_promotion_blockers = real  # type: ignore[assignment]
        assert sorted(outcomes) == ["x", "y"], outcomes
        promoted = [name for name, outcome in outcomes.items() if outcome == "promoted"]
        assert len(promoted) == 1, outcomes
        (refused,) = [outcome for outcome in outcomes.values() if outcome != "promoted"]
        assert "the live page changed after this draft was written" in refused
        page = Page.objects.select_related("current_revision").get(path="topics/p.md")
        assert page.current_revision is not None
        assert ("ALICE EDIT" if promoted == ["x"] else "BOB EDIT") in page.current_revision.body
        assert Revision.objects.filter(page=page, promoted_at__isnull=False).count() == 2  # original + one


class PromotionRuleTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=cls.alice, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=cls.bob, path="topics/", permission="suggest")

    def setUp(self) -> None:
        publish("topics/pricing/a.md", title="A", body="# A\n\nfirst text\n")
        publish("topics/pricing/c.md", title="C", body="# C\n\nsee text\n")

    def blockers(self, build: Build) -> list[str]:
        return build_promotion_blockers(build=Build.objects.get(pk=build.pk), approver=self.victor)

    def test_a_move_proposed_before_an_edit_of_its_page_is_stale(self) -> None:
        move = build_open(actor=self.alice, title="Move A")
        build_move_page(build=move, path="topics/pricing/a.md", new_path="topics/pricing/b.md")
        build_submit(actor=self.alice, build=move)
        build_promote(actor=self.victor, build=_submitted(self.bob, "Edit A", ("topics/pricing/a.md", "IMPORTANT")))
        assert self.blockers(move) == [
            "topics/pricing/a.md: the live page changed after this move was proposed; propose it again"
        ]
        with pytest.raises(PromotionBlocked):
            build_promote(actor=self.victor, build=move)
        assert "IMPORTANT" in Page.objects.get(path="topics/pricing/a.md").current_revision.body  # type: ignore[union-attr]

    def test_re_deriving_a_stale_draft_does_not_hide_a_live_edit_it_would_overwrite(self) -> None:
        """A link, an unlink (even of a page never linked), a section or a move made from a draft
        dated it anew: the blocker cleared and promotion lost the live edit made meanwhile."""
        from builds.services import build_link_pages

        def unlink(build: Build) -> object:
            return build_link_pages(build=build, path="topics/pricing/a.md", target="topics/pricing/c.md", link=False)

        def link(build: Build) -> object:
            return build_link_pages(build=build, path="topics/pricing/a.md", target="topics/pricing/c.md")

        def move(build: Build) -> object:
            return build_move_page(build=build, path="topics/pricing/a.md", new_path="topics/pricing/moved.md")

        for name, rederive in (("unlink", unlink), ("link", link), ("move", move)):
            with self.subTest(name):
                draft = build_open(actor=self.alice, title=f"Draft A ({name})")
                build_write_page(build=draft, path="topics/pricing/a.md",
                                 markdown=page_markdown(title="A", body="# A\n\ndraft text\n"))  # fmt: skip
                build_promote(
                    actor=self.victor, build=_submitted(self.bob, f"Live {name}", ("topics/pricing/a.md", "LIVE EDIT"))
                )
                rederive(draft)
                build_submit(actor=self.alice, build=draft)
                assert any("changed after this" in blocker for blocker in self.blockers(draft)), self.blockers(draft)
                with pytest.raises(PromotionBlocked):
                    build_promote(actor=self.victor, build=draft)
                assert "LIVE EDIT" in Page.objects.get(path="topics/pricing/a.md").current_revision.body  # type: ignore[union-attr]
        # Proposed again after the live edit, as a delete, the change is current: not blocked.
        again = build_open(actor=self.alice, title="Draft, link, then delete")
        build_write_page(build=again, path="topics/pricing/c.md", markdown=page_markdown(title="C", body="# C\n\nx\n"))
        build_link_pages(build=again, path="topics/pricing/c.md", target="topics/pricing/a.md")
        build_promote(actor=self.victor, build=_submitted(self.bob, "Live C", ("topics/pricing/c.md", "LIVE C")))
        build_delete_page(build=again, path="topics/pricing/c.md")
        build_submit(actor=self.alice, build=again)
        assert not [blocker for blocker in self.blockers(again) if "changed after" in blocker]

    def test_a_delete_proposed_before_an_edit_is_stale_and_an_edit_cannot_bring_back_a_deleted_page(self) -> None:
        stale_delete = build_open(actor=self.bob, title="Delete A")
        build_delete_page(build=stale_delete, path="topics/pricing/a.md")
        build_submit(actor=self.bob, build=stale_delete)
        build_promote(actor=self.victor, build=_submitted(self.alice, "Edit A", ("topics/pricing/a.md", "edited")))
        assert self.blockers(stale_delete) == [
            "topics/pricing/a.md: the live page changed after this delete was proposed; propose it again"
        ]
        # An edit drafted while the page was live, then the page deleted: the edit would bring it back.
        edit = _submitted(self.alice, "Edit A again", ("topics/pricing/a.md", "edited again"))
        delete = build_open(actor=self.bob, title="Delete A now")
        build_delete_page(build=delete, path="topics/pricing/a.md")
        build_promote(actor=self.victor, build=build_submit(actor=self.bob, build=delete))
        assert self.blockers(edit) == [
            "topics/pricing/a.md: the page was taken out of the corpus after this draft was written; draft it again"
        ]
        assert Page.objects.get(path="topics/pricing/a.md").current_revision_id is None
        # Drafted again after the deletion, it is a deliberate return: allowed.
        again = _submitted(self.alice, "Bring A back", ("topics/pricing/a.md", "back"))
        assert self.blockers(again) == []

    def test_two_changes_onto_one_path_are_refused(self) -> None:
        build = build_open(actor=self.alice, title="Two into B")
        build_move_page(build=build, path="topics/pricing/a.md", new_path="topics/pricing/b.md")
        build_move_page(build=build, path="topics/pricing/c.md", new_path="topics/pricing/b.md")
        build_submit(actor=self.alice, build=build)
        assert self.blockers(build) == [
            "topics/pricing/b.md: more than one change in this build writes this path; keep one"
        ]

    def test_a_draft_citing_what_the_approver_cannot_read_is_not_theirs_to_approve(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="read")
        grant_issue(actor=SYSTEM, member=self.alice, path="hidden/", permission="read")
        capture("secret-x")
        publish("hidden/h.md", title="H", body="# H\n\nbody\n")
        blocked = (
            "topics/pricing/a.md: it adds citations of pages or captures you cannot read; "
            "someone who can must approve it"
        )
        for sources, related in ((["secret-x"], []), ([], ["hidden/h.md"])):
            with self.subTest(sources=sources, related=related):
                build = build_open(actor=self.alice, title="Cites hidden")
                markdown = page_markdown(title="A", body="# A\n\nx\n", sources=sources, related=related)
                build_write_page(build=build, path="topics/pricing/a.md", markdown=markdown)
                build_submit(actor=self.alice, build=build)
                assert self.blockers(build) == [blocked]
        # A citation the live page already carries is not added: an edit around it is approvable.
        publish("topics/pricing/c.md", title="C", body="# C\n\nsee text\n", sources=["secret-x"])
        keeps = build_open(actor=self.alice, title="Edit C")
        markdown = page_markdown(title="C", body="# C\n\nnew text\n", sources=["secret-x"])
        build_write_page(build=keeps, path="topics/pricing/c.md", markdown=markdown)
        build_submit(actor=self.alice, build=keeps)
        assert self.blockers(keeps) == []
        # One who can read them may approve.
        grant_issue(actor=SYSTEM, member=self.victor, path="captures/", permission="read")
        grant_issue(actor=SYSTEM, member=self.victor, path="hidden/", permission="read")
        assert self.blockers(build) == []


class MoveShownEverywhereTests(BrainTestCase):
    def test_rest_and_mcp_name_where_a_move_takes_the_page(self) -> None:
        import json

        from django.test import Client

        from builds.services import build_credential_issue
        from memory.tokens import api_token_issue

        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="suggest")
        publish("topics/pricing/a.md", title="A", body="# A\n\nfirst text\n")
        build = build_open(actor=self.alice, title="Move A")
        build_move_page(build=build, path="topics/pricing/a.md", new_path="topics/pricing/b.md")
        token = api_token_issue(actor=self.alice, name="cli", scopes=["corpus:read", "builds:write"])[1]
        api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        status = api.get(f"/api/v1/builds/{build.public_id}").json()
        assert status["changes"] == [
            {"path": "topics/pricing/a.md", "action": "move", "new_path": "topics/pricing/b.md"}
        ]
        for path in ("topics/pricing/a.md", "topics/pricing/b.md"):
            diff = api.get(f"/api/v1/builds/{build.public_id}/diff", {"path": path}).json()["diff"]
            assert diff[:2] == ["rename from topics/pricing/a.md", "rename to topics/pricing/b.md"], diff
        _, credential = build_credential_issue(actor=self.alice, build=build)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "read_branch", "arguments": {}}}  # fmt: skip
        answer = self.client.post("/api/build/mcp", data=json.dumps(body), content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {credential}").json()  # fmt: skip
        assert answer["result"]["structuredContent"]["changes"][0]["new_path"] == "topics/pricing/b.md"
