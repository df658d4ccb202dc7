"""An export goes back in as an import: with its uploaded originals (an upload named notes.md or
Notes.MD is no page), and through the operator's import with "unchanged" decided one way."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from builds.driver import ArchiveRefused, files_from_zip, import_job_create
from builds.services import ImportInvalid, build_import
from corpus.export import corpus_files, corpus_plan, corpus_render, zip_stream
from grants.principals import SYSTEM
from grants.services import grant_issue
from tests.archives import unzip, zip_of
from tests.base import DISCOUNT_POLICY, BrainTestCase, capture, publish


class ExportRoundTripTests(BrainTestCase):
    def setUp(self) -> None:
        from ingest.services import document_ingest

        grant_issue(actor=SYSTEM, member=self.bob, path="captures/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.bob, path="topics/pricing/", permission="suggest")
        publish("topics/pricing/price-list.md", title="Price list", body="# Price list\n\nTeam plan: 12 EUR a seat.\n")
        self.document_ingest = document_ingest

    def edited_export(self, filename: str) -> bytes:
        self.document_ingest(actor=self.bob, filename=filename, data=b"# Notes\n\nplain notes\n", key="notes/up",
                             enqueue=False)  # fmt: skip
        plan = corpus_plan(self.bob, originals=True)
        files = unzip(b"".join(zip_stream(r.file for r in corpus_render(self.bob, plan))))
        assert any(name.startswith("originals/") for name in files), list(files)
        page = "topics/pricing/price-list.md"
        files[page] = files[page].replace(b"12 EUR", b"13 EUR")
        return zip_of(files)

    def test_an_export_with_a_markdown_original_goes_back_in(self) -> None:
        """originals/<key>/notes.md is read as a page: the whole re-import is refused."""
        try:
            build = import_job_create(
                requester=self.bob, files=files_from_zip(self.edited_export("notes.md")), title="t"
            )
        except ImportInvalid as invalid:
            pytest.fail(f"refused: {[(r.path, [p.message for p in r.problems]) for r in invalid.reports]}")
        assert build is not None

    def test_an_export_with_an_upper_case_md_original_goes_back_in(self) -> None:
        """originals/<key>/Notes.MD is refused by _refuse_entry as a page file named wrongly."""
        try:
            files_from_zip(self.edited_export("Notes.MD"))
        except ArchiveRefused as refused:
            pytest.fail(f"refused: {refused}")


class CorpusImportTests(BrainTestCase):
    def test_a_reader_only_file_as_exported_is_unchanged_or_reported_not_raised(self) -> None:
        """validate_import_files calls bob's exported copy 'unchanged' (hidden citation removed:
        ReferenceFilter) and skips the suggest/approve checks; build_import compares raw
        frontmatter, calls it changed and writes it: PermissionDenied escapes mid-import
        instead of ImportInvalid (or a no-op)."""
        capture("secret/board", title="Board", text="Hidden.")
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")
        publish("topics/pricing/price-list.md", title="Price list", sources=["secret/board"],
                related=[DISCOUNT_POLICY], body="# Price list\n\nTeam plan: 12 EUR a seat.\n")  # fmt: skip
        files = unzip(b"".join(zip_stream(corpus_files(self.bob))))
        exported = files["topics/pricing/price-list.md"].decode()
        try:
            result = build_import(requester=self.bob, approver=self.alice,
                                  files=[("topics/pricing/price-list.md", exported)])  # fmt: skip
        except ImportInvalid:
            return
        except PermissionDenied as denied:
            pytest.fail(f"PermissionDenied escaped build_import: {denied}")
        assert result.unchanged == 1
