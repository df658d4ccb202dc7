from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from builds.models import Build, BuildJobItem
from tests.base import BrainTestCase, page_markdown


class BuildCommandTests(BrainTestCase):
    def test_build_import_from_a_folder_queues_a_build(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "topics" / "pricing").mkdir(parents=True)
            (root / "topics" / "pricing" / "a.md").write_text(page_markdown(title="A"))
            (root / "topics" / "pricing" / "b.md").write_text(page_markdown(title="B"))
            out = io.StringIO()
            with self.captureOnCommitCallbacks(execute=False):
                call_command("build_import", str(root), "--requester", "alice", stdout=out)
        build = Build.objects.get()
        assert build.kind == Build.Kind.IMPORT
        assert str(build.public_id) in out.getvalue()
        assert BuildJobItem.objects.filter(job__build=build).count() == 2

    def test_build_import_reports_every_bad_file(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "topics").mkdir()
            (root / "topics" / "Bad.md").write_text(page_markdown())
            err = io.StringIO()
            with pytest.raises(CommandError, match="nothing was imported"):
                call_command("build_import", str(root), "--requester", "alice", stderr=err)
        assert "topics/Bad.md" in err.getvalue()
        assert not Build.objects.exists()

    def test_build_reembed_needs_an_administrator(self) -> None:
        with pytest.raises(CommandError, match="owner or admin"):
            call_command("build_reembed", "--requester", "alice")
        with self.captureOnCommitCallbacks(execute=False):
            call_command("build_reembed", "--requester", "charlie", stdout=io.StringIO())
        assert Build.objects.get().kind == Build.Kind.REEMBED


class BuildOpenCommandTests(BrainTestCase):
    def test_opens_a_build_and_prints_a_working_credential_once(self) -> None:
        import json

        from builds.services import build_credential_resolve

        out = io.StringIO()
        call_command("build_open", "--requester", "alice", "--title", "Agent edits", stdout=out)
        printed = out.getvalue()
        token = next(line.rsplit(" ", 1)[1] for line in printed.splitlines() if line.startswith("credential"))
        build = build_credential_resolve(token)
        assert build.title == "Agent edits"
        assert build.requester_id == self.alice.pk
        config = json.loads(printed[printed.index("{") :])
        assert config["mcpServers"]["brain-build"]["headers"]["Authorization"] == f"Bearer {token}"
        assert token not in str(build.credentials.get().token_hash)
        with pytest.raises(CommandError, match="not an active member"):
            call_command("build_open", "--requester", "nobody", "--title", "x", stdout=io.StringIO())

    def test_the_builds_page_starts_an_agent_build_and_shows_its_credential_once(self) -> None:
        import re

        from builds.services import build_credential_resolve

        self.client.force_login(self.alice.user)
        page = self.client.post("/builds/", {"title": "Update the price list"}, follow=True).content.decode()
        token = re.search(r"<code>(bld_[^<]+)</code>", page)
        assert token, page[:2000]
        assert build_credential_resolve(token.group(1)).title == "Update the price list"
        assert "/api/build/mcp" in page
        assert token.group(1) not in self.client.get("/builds/").content.decode()  # shown once
