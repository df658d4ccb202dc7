"""A hidden capture cited by a page is carried by the server, never confirmed to its author.

The author's own text naming a capture they cannot read is answered exactly like a missing
key, whether or not the live page cites it (it was accepted when the page cited it: an
oracle for what a page cites). Drafts the server derives from the page — a link, a section,
a move — carry the page's citations over, hidden ones included, so nothing is lost.
"""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from builds.models import BuildChange
from builds.services import (
    build_add_section,
    build_credential_issue,
    build_link_pages,
    build_move_page,
    build_open,
)
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import BrainTestCase, capture, page_markdown, publish

PAGE = "topics/pricing/price-list.md"
HIDDEN = "capture:board/secret-deal"


class HiddenCitationTests(BrainTestCase):
    def setUp(self) -> None:
        self.dora = member_create(actor=SYSTEM, username="dora")
        grant_issue(actor=SYSTEM, member=self.dora, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.dora, path="captures/notes/", permission="read")
        capture("board/secret-deal", title="Secret deal memo", sensitivity="restricted")
        capture("board/other-secret", title="Other", sensitivity="restricted")
        capture("notes/call", title="Call notes")
        publish(PAGE, title="Price list", owner="alice", sources=["board/secret-deal"])
        self.build = build_open(actor=self.dora, title="edits")

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        token = build_credential_issue(actor=self.dora, build=self.build)[1]
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = Client().post("/api/build/mcp", data=json.dumps(body), content_type="application/json",
                                 HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        return dict(response.json()["result"])

    def test_the_authors_text_naming_a_hidden_key_is_answered_as_a_missing_one(self) -> None:
        for tool in ("validate_page", "write_page"):
            answers = []
            for key in ("board/secret-deal", "board/other-secret", "board/no-such"):
                markdown = page_markdown(owner="alice", title="Price list", sources=[key])
                result = self.call(tool, {"path": PAGE, "markdown": markdown})
                text = result["content"][0]["text"].replace(key, "<key>")
                answers.append((result.get("isError"), text))
            assert answers[0] == answers[1] == answers[2], (tool, answers)

    def test_drafts_the_server_derives_carry_the_hidden_citation(self) -> None:
        build_link_pages(build=self.build, path=PAGE, target="topics/pricing/other.md")
        build_add_section(build=self.build, path=PAGE, heading="Call", text="Discussed.", cite="notes/call")
        draft = BuildChange.objects.get(build=self.build, path=PAGE).revision
        assert draft is not None
        assert HIDDEN in draft.frontmatter["sources"]
        assert "capture:notes/call" in draft.frontmatter["sources"]
        moved = build_open(actor=self.dora, title="move")
        build_move_page(build=moved, path=PAGE, new_path="topics/pricing/prices.md")
        move = BuildChange.objects.get(build=moved, path=PAGE).revision
        assert move is not None
        assert HIDDEN in move.frontmatter["sources"]

    def test_a_rewrite_made_from_what_the_author_read_keeps_what_they_could_not_see(self) -> None:
        """read_page leaves the hidden citation and related page out; a rewrite made from it kept
        neither, and promotion would have dropped them without anyone who could see them seeing it."""
        hidden_page = "topics/board/plan.md"
        publish(hidden_page, title="Board plan", sensitivity="restricted")
        publish("topics/pricing/other.md", title="Other prices")
        publish(PAGE, title="Price list", owner="alice", sources=["board/secret-deal", "notes/call"],
                related=[hidden_page, "topics/pricing/other.md"])  # fmt: skip
        seen = self.call("read_page", {"path": PAGE})
        assert "secret-deal" not in json.dumps(seen)
        assert hidden_page not in json.dumps(seen)
        # The agent rewrites the page from what it read, and drops the visible related page.
        rewrite = page_markdown(owner="alice", title="Price list", sources=["notes/call"], body="# Prices\n\nNew.\n")
        assert not self.call("write_page", {"path": PAGE, "markdown": rewrite}).get("isError")
        draft = BuildChange.objects.get(build=self.build, path=PAGE).revision
        assert draft is not None
        assert draft.frontmatter["sources"] == ["capture:notes/call", HIDDEN]
        assert draft.frontmatter["related"] == [hidden_page]  # its own removal stands; the hidden one is kept
        assert draft.body.strip() == "# Prices\n\nNew."
        # What the requester is shown of their draft still names neither.
        from builds.review import build_review

        shown = build_review(build=self.build, viewer=self.dora)
        text = json.dumps([(change.diff, change.frontmatter_text) for change in shown.changes], default=str)
        assert "secret-deal" not in text
        assert hidden_page not in text
        # Someone who can read everything sees the citations unchanged in the diff.
        full = build_review(build=self.build, viewer=self.alice)
        removed = [
            "".join(text for text, _ in line.segments)
            for change in full.changes
            for line in change.diff.lines
            if line.kind == "del"
        ]
        assert removed  # the body's lines
        assert not any("secret-deal" in line or hidden_page in line for line in removed), removed
        # Promoted, the build's record gives its writer the hash of what they may read, not of
        # the text holding the citation put back for them (a hash to test guesses against).
        from builds.selectors import build_summary
        from builds.services import build_promote, build_submit
        from corpus.models import Page
        from corpus.selectors import page_read

        build_promote(actor=SYSTEM, build=build_submit(actor=self.dora, build=self.build))
        self.build.refresh_from_db()
        live = Page.objects.get(path=PAGE).current_revision
        assert live is not None
        assert HIDDEN in live.frontmatter["sources"]
        approval: Any = build_summary(build=self.build, viewer=self.dora)["promotion"]
        [change] = approval["changes"]
        assert change["sha256"] == page_read(principal=self.dora, path=PAGE).revision_sha256 != live.sha256
        approved: Any = build_summary(build=self.build, viewer=SYSTEM)["promotion"]
        assert approved["changes"][0]["sha256"] == live.sha256

    def test_the_hash_a_reader_is_given_is_of_what_they_read(self) -> None:
        """The stored sha256 covers the whole text: a reader could rebuild the page from what they
        are shown plus a guessed key and test it against the hash, key by key, offline."""
        from builds.history import page_history
        from corpus.models import Page
        from corpus.selectors import page_read

        stored = Page.objects.get(path=PAGE).current_revision
        assert stored is not None
        dora = page_read(principal=self.dora, path=PAGE)
        assert dora.sources == []
        assert dora.revision_sha256 != stored.sha256
        assert page_read(principal=SYSTEM, path=PAGE).revision_sha256 == stored.sha256
        history = page_history(principal=self.dora, path=PAGE)[1]
        assert [entry.sha256 for entry in history] == [dora.revision_sha256]
        # The same for every reader who is shown the same; it changes when what they see changes.
        grant_issue(actor=SYSTEM, member=self.bob, path="captures/notes/", permission="read")
        assert page_read(principal=self.bob, path=PAGE).revision_sha256 == dora.revision_sha256
