"""A build touching what a viewer cannot read shows them nothing of it: not a moved page's old
path or text, not a hidden page's owner or history through the blockers, not a title or note
through page history, the mirror or the home page, and not a draft its own author has lost."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from django.test import Client, override_settings

from builds.selectors import build_promotion_blockers
from builds.services import (
    build_credential_issue,
    build_link_pages,
    build_move_page,
    build_open,
    build_promote,
    build_record_capture,
    build_submit,
    build_write_page,
)
from grants.principals import SYSTEM
from grants.services import grant_issue, grant_revoke, member_create, service_account_create
from mirror.models import Mirror
from mirror.services import mirror_run, mirror_save
from tests.base import DISCOUNT_POLICY, BrainTestCase, page_markdown, publish


class HiddenEndsTests(BrainTestCase):
    def setUp(self) -> None:
        publish("topics/onboarding.md", title="Onboarding")
        publish("hr/salaries.md", title="Salaries", body="# Salaries\n\nDana earns 90k.\n")
        self.victor = member_create(actor=SYSTEM, username="victor")
        for path in ("topics/", "hr/"):
            grant_issue(actor=SYSTEM, member=self.victor, path=path, permission="approve")
            grant_issue(actor=SYSTEM, member=self.alice, path=path, permission="suggest")
        self.rita = member_create(actor=SYSTEM, username="rita")
        grant_issue(actor=SYSTEM, member=self.rita, path="topics/", permission="approve")

    def test_a_move_out_of_a_hidden_path_shows_neither_its_path_nor_its_text(self) -> None:
        build = build_open(actor=self.alice, title="Tidy")
        build_move_page(build=build, path="hr/salaries.md", new_path="topics/salaries.md")
        build_write_page(build=build, path="topics/onboarding.md", markdown=page_markdown(title="Onboarding"))
        build_submit(actor=self.alice, build=build)
        rita = Client()
        rita.force_login(self.rita.user)
        page = rita.get(f"/builds/{build.public_id}/").content.decode()
        assert "hr/salaries.md" not in page
        assert "Dana earns" not in page
        build_promote(actor=self.victor, build=build)
        # Promoted, the page lives under topics/, which Rita reads: it arrived there, from nowhere she sees.
        page = rita.get(f"/builds/{build.public_id}/").content.decode()
        assert "hr/salaries.md" not in page
        assert "topics/salaries.md" in page

    def test_a_hidden_live_page_under_a_draft_is_never_named_by_the_blockers(self) -> None:
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted", owner="alice", change_policy="owner")
        vera = member_create(actor=SYSTEM, username="vera")
        grant_issue(actor=SYSTEM, member=vera, path="topics/", permission="approve")
        build = build_open(actor=self.alice, title="Policy")
        build_write_page(build=build, path=DISCOUNT_POLICY, markdown=page_markdown(title="Policy"))
        build_write_page(build=build, path="topics/other.md", markdown=page_markdown(title="Other"))
        blockers = build_promotion_blockers(build=build_submit(actor=self.alice, build=build), approver=vera)
        assert blockers == ["the build changes pages you may not approve"], blockers

    def test_a_builds_title_stays_hidden_where_it_also_carried_a_hidden_capture(self) -> None:
        build = build_open(actor=self.alice, title="Layoffs: board minutes March")
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/secret/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.victor, path="captures/secret/", permission="approve")
        build_record_capture(build=build, key="secret/board-march", kind="note", title="Board", text="Minutes.")
        build_write_page(build=build, path="topics/onboarding.md", markdown=page_markdown(title="Onboarding"))
        build_submit(actor=self.alice, build=build)
        build_promote(actor=self.victor, build=build, note="per board decision on layoffs")
        bob = Client()
        bob.force_login(self.bob.user)
        history = bob.get("/pages/topics/onboarding.md/history").content.decode()
        assert "Layoffs" not in history
        assert "board decision" not in history

    def test_home_lists_no_approval_made_while_the_page_was_hidden(self) -> None:
        for round_ in range(3):
            publish("topics/reorg.md", title="Reorg", sensitivity="restricted", body=f"# Reorg\n\nplan {round_}\n")
        publish("topics/reorg.md", title="Reorg", body="# Reorg\n\nannounced\n")
        bob = Client()
        bob.force_login(self.bob.user)
        home = bob.get("/").content.decode()
        assert home.count("topics/reorg.md") <= 1 or home.count('href="/pages/topics/reorg.md"') == 1

    def test_a_draft_copied_from_a_page_its_author_lost_is_not_read_back(self) -> None:
        build = build_open(actor=self.alice, title="Links")
        publish(DISCOUNT_POLICY, category="pricing", sensitivity="restricted", body="# Policy\n\nSecret terms.\n")
        build_link_pages(build=build, path=DISCOUNT_POLICY, target="topics/onboarding.md")
        _, token = build_credential_issue(actor=self.alice, build=build)
        grant_revoke(actor=SYSTEM, grant=self.alice_exact_grant)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "read_draft", "arguments": {"path": DISCOUNT_POLICY}}}  # fmt: skip
        answer = self.client.post("/api/build/mcp", data=json.dumps(body), content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {token}").json()  # fmt: skip
        assert "Secret terms" not in json.dumps(answer)
        assert answer["result"]["isError"] is True


class MirrorNamesOnlyWhatItShowsTests(BrainTestCase):
    def test_a_build_that_also_changed_hidden_pages_is_not_named_in_the_commit(self) -> None:
        scratch = Path(tempfile.mkdtemp(prefix="brain-mirror-"))
        self.addCleanup(shutil.rmtree, scratch, True)
        remote = scratch / "remote.git"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(scratch), "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "--bare", "--quiet", "--initial-branch=main", str(remote)], check=True, env=env)
        service = service_account_create(actor=SYSTEM, name="docs-mirror")
        grant_issue(actor=SYSTEM, service_account=service, path="topics/", permission="read")
        publish("topics/onboarding.md", title="Onboarding")
        publish("hr/salaries.md", title="Salaries", body="# Salaries\n\nDana earns 90k.\n")
        victor = member_create(actor=SYSTEM, username="victor")
        for path in ("topics/", "hr/"):
            grant_issue(actor=SYSTEM, member=victor, path=path, permission="approve")
            grant_issue(actor=SYSTEM, member=self.alice, path=path, permission="suggest")
        with override_settings(BRAIN_MIRROR_CACHE=scratch / "cache"):
            mirror = mirror_save(actor=SYSTEM, mirror=Mirror(name="docs", remote_url=f"file://{remote}", branch="main",
                                                             service_account=service))  # fmt: skip
            mirror_run(mirror_id=mirror.pk)
            build = build_open(actor=self.alice, title="Pay rise for Dana and onboarding")
            build_write_page(build=build, path="hr/salaries.md", markdown=page_markdown(title="Salaries"))
            build_write_page(build=build, path="topics/onboarding.md", markdown=page_markdown(title="Onboarding 2"))
            build_submit(actor=self.alice, build=build)
            build_promote(actor=victor, build=build, note="Dana raise approved by board")
            mirror_run(mirror_id=mirror.pk)
        log = subprocess.run(["git", "log", "--format=%B"], cwd=remote, capture_output=True, text=True, env=env).stdout
        assert "Pay rise" not in log
        assert "Dana" not in log
