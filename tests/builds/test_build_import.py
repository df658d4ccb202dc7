"""Importing a tree: all or nothing, recorded as approved, and free to repeat."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from brain import embeddings
from builds.models import Build, Promotion
from builds.services import ImportInvalid, build_import
from corpus.models import Chunk, Page, Revision, RevisionChunk
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from tests.base import DISCOUNT_POLICY, BrainTestCase, page_markdown

TREE = {
    "topics/pricing/price-list.md": page_markdown(
        title="Price list",
        body="# Price list\n\n## Plans\n\nTeam and Enterprise.\n\n## Billing\n\nAnnual prepayment.\n",
    ),
    "topics/pricing/renewals.md": page_markdown(
        title="Renewals", body="# Renewals\n\nRenewals happen yearly.\n\n## Notice\n\nNinety days.\n"
    ),
    DISCOUNT_POLICY: page_markdown(
        title="Discount policy",
        category="pricing",
        sensitivity="restricted",
        body="# Discount policy\n\n## Ceiling\n\nUp to 12% without escalation. See [list](price-list.md).\n",
    ),
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


class VictorMixin:
    """Victor approves what Alice drafts (a requester may not approve their own build)."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()  # type: ignore[misc]
        cls.victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/pricing/", permission="approve")
        grant_issue(actor=SYSTEM, member=cls.victor, path=DISCOUNT_POLICY, permission="approve")


class CorpusImportTests(VictorMixin, BrainTestCase):
    def test_import_is_recorded_as_approved_by_the_approver(self) -> None:
        result = build_import(requester=self.alice, approver=self.victor, files=TREE.items())
        assert (result.created, result.updated, result.unchanged) == (3, 0, 0)
        page = Page.objects.get(path=DISCOUNT_POLICY)
        assert page.current_revision.promoted_by == self.victor
        assert page.current_revision.author == self.alice
        assert page.sensitivity == 1
        promotion = Promotion.objects.get(build=result.build)
        assert promotion.approver == self.victor
        assert {item["path"] for item in promotion.approved} == set(TREE)
        assert result.build.kind == Build.Kind.IMPORT
        assert result.build.status == Build.Status.PROMOTED
        assert AuditEvent.objects.filter(action="build.promote", actor_label="victor").exists()
        assert list(page.links_out.values_list("to_path", flat=True)) == ["topics/pricing/price-list.md"]

    def test_reimporting_the_same_tree_computes_no_embedding_and_no_chunk(self) -> None:
        spy = mock.patch.object(embeddings, "embed", wraps=embeddings.embed)
        with spy as embed:
            build_import(requester=self.alice, approver=self.victor, files=TREE.items())
            first_calls = embed.call_count
            chunks_before = Chunk.objects.count()
            revisions_before = Revision.objects.count()
            result = build_import(requester=self.alice, approver=self.victor, files=TREE.items())
        assert first_calls >= 1
        assert embed.call_count == first_calls  # zero calls on the second import
        assert Chunk.objects.count() == chunks_before
        assert Revision.objects.count() == revisions_before
        assert (result.created, result.updated, result.unchanged) == (0, 0, 3)

    def test_changed_page_reuses_unchanged_chunks(self) -> None:
        build_import(requester=self.alice, approver=self.victor, files=TREE.items())
        changed = dict(TREE)
        changed["topics/pricing/renewals.md"] = changed["topics/pricing/renewals.md"].replace(
            "Ninety days.", "Sixty days."
        )
        with mock.patch.object(embeddings, "embed", wraps=embeddings.embed) as embed:
            result = build_import(requester=self.alice, approver=self.victor, files=changed.items())
        assert (result.updated, result.unchanged) == (1, 2)
        assert result.chunks.embedded == 1
        assert result.chunks.reused == 1
        assert embed.call_count == 1
        assert len(embed.call_args.args[0]) == 1

    def test_any_invalid_file_imports_nothing_and_lists_every_failure(self) -> None:
        bad = dict(TREE)
        bad["topics/Bad-Case.md"] = page_markdown(title="Bad")
        bad["topics/pricing/no-owner.md"] = page_markdown(owner="nobody", title="No owner")
        bad["topics/pricing/leak.md"] = page_markdown(body="# Leak\n\ncard 4111 1111 1111 1111\n")
        bad["engineering/outside.md"] = page_markdown(title="Outside alice's grants")
        with pytest.raises(ImportInvalid) as invalid:
            build_import(requester=self.alice, approver=self.victor, files=bad.items())
        failing = {report.path: [str(p) for p in report.problems] for report in invalid.value.reports}
        assert set(failing) == {
            "topics/Bad-Case.md",
            "topics/pricing/no-owner.md",
            "topics/pricing/leak.md",
            "engineering/outside.md",
        }
        assert "uppercase" in failing["topics/Bad-Case.md"][0]
        assert "not an active member" in failing["topics/pricing/no-owner.md"][0]
        assert "payment_card" in failing["topics/pricing/leak.md"][0]
        assert "4111" not in failing["topics/pricing/leak.md"][0]
        assert any("requester" in p for p in failing["engineering/outside.md"])
        assert not Page.objects.exists()
        assert not Revision.objects.exists()
        assert not RevisionChunk.objects.exists()

    def test_requester_cannot_approve_their_own_import(self) -> None:
        with pytest.raises(ImportInvalid) as invalid:
            build_import(requester=self.alice, approver=self.alice, files=TREE.items())
        assert "the requester cannot approve their own build" in str(invalid.value.reports[-1].problems[0])
        assert not Page.objects.exists()

    def test_bob_cannot_approve(self) -> None:
        with pytest.raises(ImportInvalid) as invalid:
            build_import(requester=self.alice, approver=self.bob, files=TREE.items())
        assert all("approver" in str(p) for r in invalid.value.reports for p in r.problems)
        assert not Build.objects.exists()
        assert not Page.objects.exists()

    def test_an_embedder_outage_imports_everything_and_leaves_the_vectors_to_the_backfill(self) -> None:
        from corpus.tasks import chunks_backfill_task

        def broken(texts):
            raise embeddings.EmbeddingError("the embedder failed (RuntimeError)")

        with mock.patch.object(embeddings, "embed", side_effect=broken):
            result = build_import(requester=self.alice, approver=self.victor, files=TREE.items())
        assert result.chunks.embedded == 0
        assert Page.objects.count() == 3
        assert Chunk.objects.filter(embedding__isnull=True).count() == Chunk.objects.count() > 0
        chunks_backfill_task()
        assert not Chunk.objects.filter(embedding__isnull=True).exists()


class CorpusImportCommandTests(VictorMixin, BrainTestCase):
    def test_command_imports_a_directory(self) -> None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            root = write_tree(Path(tmp), TREE)
            out = io.StringIO()
            call_command("corpus_import", str(root), "--requester", "alice", "--approver", "victor", stdout=out)
        assert "3 created" in out.getvalue()
        assert Page.objects.count() == 3

    def test_command_fails_with_a_report_and_imports_nothing(self) -> None:
        import tempfile

        bad = dict(TREE)
        bad["topics/pricing/broken.md"] = "---\ntype: [unclosed\n---\nbody\n"
        with tempfile.TemporaryDirectory() as tmp:
            root = write_tree(Path(tmp), bad)
            err = io.StringIO()
            with pytest.raises(CommandError, match="nothing was imported"):
                call_command("corpus_import", str(root), "--requester", "alice", "--approver", "victor", stderr=err)
        assert "topics/pricing/broken.md" in err.getvalue()
        assert "not valid YAML" in err.getvalue()
        assert not Page.objects.exists()

    def test_a_symbolic_link_in_the_folder_is_refused_naming_it(self) -> None:
        import tempfile

        from builds.driver import ArchiveRefused, files_from_folder

        with tempfile.TemporaryDirectory() as outside, tempfile.TemporaryDirectory() as tmp:
            private = Path(outside) / "private.md"
            private.write_text("---\ntitle: Outside the tree\n---\nPrivate.\n")
            (Path(outside) / "more").mkdir()
            (Path(outside) / "more" / "x.md").write_text("---\ntitle: Also outside\n---\nx\n")
            for name, target in (("topics/linked.md", private), ("topics/folder", Path(outside) / "more")):
                with self.subTest(name=name):
                    root = write_tree(Path(tmp) / name.replace("/", "-"), TREE)
                    (root / name).symlink_to(target)
                    with pytest.raises(CommandError, match=f"{name} is a symbolic link"):
                        call_command("corpus_import", str(root), "--requester", "alice", "--approver", "victor")
                    with pytest.raises(ArchiveRefused, match="symbolic link"):
                        files_from_folder(root)
        assert not Page.objects.exists()

    def test_an_archive_of_more_pages_than_an_upload_validates_is_refused_at_once(self) -> None:
        from builds.driver import ArchiveRefused, files_from_zip

        data = io.BytesIO()
        with zipfile.ZipFile(data, "w") as archive:
            for number in range(6):
                archive.writestr(f"topics/p{number}.md", "x")
        with override_settings(BRAIN_BUILD_DRIVER={"MAX_FILES": 5}), pytest.raises(ArchiveRefused, match="at most 5"):
            files_from_zip(data.getvalue())

    def test_a_page_saved_with_a_byte_order_mark_imports(self) -> None:
        from builds.driver import files_from_zip

        data = io.BytesIO()
        with zipfile.ZipFile(data, "w") as archive:
            archive.writestr("topics/bom.md", "\ufeff" + page_markdown(owner="alice", title="Saved by Notepad"))
        [(path, text)] = files_from_zip(data.getvalue())
        assert (path, text.startswith("---")) == ("topics/bom.md", True)

    def test_exit_code_is_non_zero(self) -> None:
        import os
        import subprocess
        import sys
        import tempfile
        from urllib.parse import urlsplit, urlunsplit

        from django.db import connection

        from brain.launcher import PROJECT_ROOT

        # The child process must use the (migrated) test database, not the development one.
        url = urlsplit(os.environ["DATABASE_URL"])
        test_url = urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"]))
        with tempfile.TemporaryDirectory() as tmp:
            write_tree(Path(tmp), {"Bad.md": "x"})
            result = subprocess.run(
                [sys.executable, "manage.py", "corpus_import", tmp, "--requester", "nobody", "--approver", "nobody"],
                env={**os.environ, "DATABASE_URL": test_url},
                cwd=PROJECT_ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
        assert result.returncode != 0
        assert "'nobody' is not an active member" in result.stderr


class ExportRoundTripTests(VictorMixin, BrainTestCase):
    def test_an_unchanged_exported_page_reimports_as_unchanged(self) -> None:
        """The export writes a page as the reader shows it (a blank line after the frontmatter,
        no trailing newline), never byte for byte as first written: every re-imported page was
        a new revision of nothing."""
        from corpus.export import corpus_plan, corpus_render

        victor = self.victor  # type: ignore[attr-defined]
        build_import(requester=self.alice, approver=victor, files=TREE.items())
        revisions = Revision.objects.count()
        exported = [
            (rendered.entry.subject, rendered.file.data.decode())
            for rendered in corpus_render(self.alice, corpus_plan(self.alice))
            if rendered.entry.kind == "page"
        ]
        assert {path for path, _ in exported} == set(TREE)
        assert any(markdown != TREE[path] for path, markdown in exported)  # not byte for byte
        result = build_import(requester=self.alice, approver=victor, files=exported)
        assert (result.created, result.updated, result.unchanged) == (0, 0, len(TREE))
        assert Revision.objects.count() == revisions
