"""Document ingest: every supported type, written by real libraries in the test, with planted
secrets that must come out masked; bad inputs; re-ingest; grants on the capture."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import zipfile
from typing import Any
from unittest import mock

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.test import TestCase, override_settings

from corpus.models import Source
from corpus.selectors import source_get_visible, source_list_visible, source_search
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from ingest import tasks
from ingest.models import Document, Extraction
from ingest.services import document_ingest, extraction_retry, extraction_run

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
IBAN = "GB82 WEST 1234 5698 7654 32"
CARD = "4111 1111 1111 1111"
BODY = f"Northwind renewal notes. The deploy key is {AWS_KEY}. Pay to {IBAN}. Card {CARD} on file."


def pdf_bytes(text: str = BODY, pages: int = 1) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for _ in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def docx_bytes(text: str = BODY) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Renewal", level=1)
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


FILES: dict[str, tuple[str, Any]] = {
    "notes.md": ("markdown", lambda: f"# Renewal\n\n{BODY}\n".encode()),
    "notes.txt": ("text", lambda: f"{BODY}\n".encode()),
    "page.html": (
        "html",
        lambda: (
            f"<!doctype html><html><head><style>p{{}}</style></head><body><p>{BODY}</p>"
            "<script>var x = 1;</script></body></html>".encode()
        ),
    ),
    "contract.pdf": ("pdf", pdf_bytes),
    "contract.docx": ("docx", docx_bytes),
    "call.vtt": ("vtt", lambda: f"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n{BODY}\n".encode()),
    "call.srt": ("srt", lambda: f"1\n00:00:01,000 --> 00:00:04,000\n{BODY}\n".encode()),
}


@override_settings(BRAIN_PROCESSING_REGION="eu-west-1")
class IngestTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="suggest")

    def ingest(self, filename: str, data: bytes, **kwargs: Any) -> Extraction:
        extraction = document_ingest(actor=self.alice, filename=filename, data=data, enqueue=False, **kwargs)
        extraction_run(extraction.pk)
        extraction.refresh_from_db()
        return extraction

    def test_every_supported_type_is_extracted_with_secrets_masked_in_place(self) -> None:
        for filename, (kind, make) in FILES.items():
            with self.subTest(filename), self.assertLogs("ingest", level="INFO") as logs:
                extraction = self.ingest(filename, make())
                assert extraction.status == "done", extraction.error
                assert extraction.document.detected_type == kind
                text = Source.objects.get(pk=extraction.document.source_id).text
                assert "Northwind renewal notes" in text
                for secret in (AWS_KEY, IBAN, CARD, "4111111111111111"):
                    assert secret not in text
                    assert secret not in "\n".join(logs.output)
                assert "[REDACTED credential]" in text
                assert extraction.masked.get("credential") == 1
                assert extraction.masked.get("bank_identifier") == 1
                assert extraction.masked.get("payment_card") == 1
                assert extraction.region == "eu-west-1"
                assert extraction.char_count == len(text)
                assert extraction.extractor
                assert "var x" not in text  # scripts are not text
        audit = json.dumps(list(AuditEvent.objects.values("metadata", "target")))
        assert AWS_KEY not in audit

    def test_values_broken_across_lines_cues_and_markup_are_masked_whole(self) -> None:
        """The detector masks what a reader (or listener) takes in as one value, in every format."""
        card_head, card_tail = "4111 1111", "1111 1111"
        cases: dict[str, tuple[bytes, list[str]]] = {
            # A card spoken across two subtitle cues.
            "cues.vtt": (
                (f"WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nMy card is {card_head}\n\n"
                 f"00:00:03.000 --> 00:00:06.000\n{card_tail} thanks\n").encode(),
                [card_head, card_tail],
            ),
            "cues.srt": (
                (b"1\n00:00:01,000 --> 00:00:03,000\nThe key is AKIAIOSF\n\n"
                 b"2\n00:00:03,000 --> 00:00:06,000\nODNN7EXAMPLE ok\n"),
                ["AKIAIOSF", "ODNN7EXAMPLE"],
            ),
            # A card wrapped after a trailing space, and an IBAN wrapped mid-group.
            "wrapped.txt": (
                f"Card on file {card_head} \n{card_tail} exp 09/29.\nIBAN GB82 WEST 1234 56\n98 7654 32 ok\n".encode(),
                [card_head, card_tail, "GB82 WEST", "98 7654 32"],
            ),
            # Entities and markup in HTML.
            "entities.html": (
                b"<html><body><p>Key &#65;&#75;IA<b>IOSF</b>ODNN7EXAMPLE here.</p></body></html>",
                ["IOSF", "ODNN7EXAMPLE"],
            ),
            # A narrow PDF column wraps the card over two lines.
            "narrow.pdf": (self._narrow_pdf(f"Please charge {card_head} {card_tail} for the renewal."), [card_tail]),
        }  # fmt: skip
        for filename, (data, fragments) in cases.items():
            with self.subTest(filename):
                extraction = self.ingest(filename, data)
                assert extraction.status == "done", extraction.error
                text = Source.objects.get(pk=extraction.document.source_id).text
                assert "[REDACTED" in text, text
                for fragment in fragments:
                    assert fragment not in text, (filename, text)

    @staticmethod
    def _narrow_pdf(text: str) -> bytes:
        from fpdf import FPDF

        pdf = FPDF()
        pdf.set_font("helvetica", size=11)
        pdf.add_page()
        pdf.multi_cell(60, 8, text)
        return bytes(pdf.output())

    def test_text_the_database_cannot_hold_is_cleaned_and_the_extraction_ends(self) -> None:
        # A PDF string with a NUL (octal \000) and HTML naming a surrogate: converters return
        # both; the text's UPDATE used to fail outside the error handling, the extraction stayed
        # "running" and the sweep re-ran it without end.
        content = b"BT /F1 12 Tf 72 720 Td (hello \\000 world) Tj ET"
        objects = [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
        pdf = io.BytesIO()
        pdf.write(b"%PDF-1.4\n")
        offsets = []
        for number, body in enumerate(objects, 1):
            offsets.append(pdf.tell())
            pdf.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
        xref = pdf.tell()
        pdf.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
        for offset in offsets:
            pdf.write(b"%010d 00000 n \n" % offset)
        pdf.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
        for filename, data in (
            ("nul.pdf", pdf.getvalue()),
            ("odd.html", b"<!doctype html><html><body><p>before &#xD800; after</p></body></html>"),
        ):
            with self.subTest(filename):
                extraction = self.ingest(filename, data)
                assert extraction.status == "done", extraction.error
                text = Source.objects.get(pk=extraction.document.source_id).text
                assert "\x00" not in text
                assert not any("\ud800" <= c <= "\udfff" for c in text)
                assert ("hello" in text) if filename.endswith(".pdf") else ("before" in text)
                assert extraction.document.detected_type == {"pdf": "pdf", "html": "html"}[filename.rsplit(".", 1)[1]]

    def test_text_past_the_databases_limits_fails_once_instead_of_retrying_for_ever(self) -> None:
        """PostgreSQL refusing a text for its program limits (SQLSTATE class 54: a 1.27 MB
        tsvector) is an operational error to psycopg: the extraction was re-raised as "database
        down", stayed running, and the sweep re-converted and re-embedded it every ten minutes."""
        from django.db import connection

        from corpus.models import SourceChunk

        dense = " ".join(
            chr(0x4E00 + n // 200) + chr(0x4E00 + n % 200) + "-" + chr(0x5E00 + n // 200) + chr(0x5E00 + n % 200)
            for n in range(34_000)
        )
        real = SourceChunk.objects.bulk_create

        def refused_by_the_database(*args: Any, **kwargs: Any) -> Any:
            with connection.cursor() as cursor:  # PostgreSQL's own refusal, at the storing step
                cursor.execute("SELECT to_tsvector('english', %s)", [dense])
            return real(*args, **kwargs)

        with mock.patch.object(SourceChunk.objects, "bulk_create", refused_by_the_database):
            extraction = self.ingest("notes.txt", BODY.encode())
        assert extraction.status == "failed"
        assert "too large or complex" in extraction.error

    def test_a_file_of_many_tiny_sections_is_stored_in_a_bounded_number_of_chunks(self) -> None:
        """An 84 KB glossary of 14,000 one-line sections made 14,000 chunks, each embedded and
        held as a vector; their one INSERT passed PostgreSQL's 65,535 parameters and failed on
        every retry (the row "running" until the attempts ran out)."""
        from corpus.models import SourceChunk

        glossary = "".join(f"# Entry {n}\nTerm {n}.\n" for n in range(3_000))  # fewer, to embed quickly
        extraction = self.ingest("glossary.md", glossary.encode())
        assert extraction.status == "done", extraction.error
        chunks = list(SourceChunk.objects.filter(source=extraction.document.source).order_by("ordinal"))
        assert len(chunks) <= 2 * len(glossary) // 1200 + 1
        assert all(len(chunk.text) <= 1200 for chunk in chunks)
        assert all(chunk.embedding is not None for chunk in chunks)
        joined = "\n".join(chunk.text for chunk in chunks)
        assert "Entry 0" in joined
        assert "Term 2999." in joined  # nothing lost at the end

    def test_hostile_zips_and_dead_workers_end_as_failed_with_a_reason(self) -> None:
        """A zip entry named in bad UTF-8 was a 500 on every upload surface; a worker that died
        on every claim left the extraction "running" for ever; and the capture recorded the
        hash of empty text."""
        import hashlib

        from django.utils import timezone

        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("word/document.xml", "<w:document/>")
            zipped.writestr("bad.txt", "x")
        data = archive.getvalue().replace(b"bad.txt", b"\xff\xfe\xfd.txt")
        flagged = bytearray(data)
        for marker in (b"PK\x01\x02", b"PK\x03\x04"):  # set the UTF-8 flag of every entry
            start = 0
            while (found := flagged.find(marker, start)) != -1:
                offset = found + (8 if marker == b"PK\x01\x02" else 6)
                flagged[offset] |= 0x08
                flagged[offset + 1] |= 0x08
                start = found + 4
        with pytest.raises(ValidationError):
            document_ingest(actor=self.alice, filename="report.docx", data=bytes(flagged), enqueue=False)

        extraction = document_ingest(actor=self.alice, filename="notes.txt", data=BODY.encode(), enqueue=False)
        Extraction.objects.filter(pk=extraction.pk).update(
            status="running", attempts=3, lease_expires_at=timezone.now() - dt.timedelta(minutes=1)
        )
        assert extraction_run(extraction.pk) == "failed"
        extraction.refresh_from_db()
        assert "attempts" in extraction.error
        retried = extraction_retry(actor=self.alice, extraction_id=extraction.pk)
        assert extraction_run(retried.pk) == "done"
        source = Source.objects.get(pk=extraction.document.source_id)
        assert source.sha256 == hashlib.sha256(source.text.encode()).hexdigest() != hashlib.sha256(b"").hexdigest()

    def test_a_pdf_whose_page_tree_repeats_itself_fails_saying_so(self) -> None:
        """Each node names one child twice: pypdf's own limit stops it, which was reported as
        "the extractor crashed; try again" (and trying again failed the same way)."""
        depth = 16
        objects = {1: "<< /Type /Catalog /Pages 2 0 R >>",
                   2: f"<< /Type /Pages /Kids [3 0 R 3 0 R] /Count {2 ** (depth + 1)} >>"}  # fmt: skip
        for level in range(depth):
            node, child = 3 + level, 4 + level
            objects[node] = (
                f"<< /Type /Pages /Parent 2 0 R /Kids [{child} 0 R {child} 0 R] /Count {2 ** (depth - level)} >>"
            )
        objects[3 + depth] = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"
        pdf = io.BytesIO()
        pdf.write(b"%PDF-1.4\n")
        offsets = {}
        for number in sorted(objects):
            offsets[number] = pdf.tell()
            pdf.write(f"{number} 0 obj\n{objects[number]}\nendobj\n".encode())
        xref = pdf.tell()
        pdf.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
        for number in sorted(objects):
            pdf.write(f"{offsets[number]:010d} 00000 n \n".encode())
        pdf.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
        extraction = self.ingest("tree.pdf", pdf.getvalue())
        assert extraction.status == "failed"
        assert "page tree" in extraction.error

    def test_the_type_comes_from_the_content_not_the_extension(self) -> None:
        disguised = self.ingest("report.txt", pdf_bytes("Quarterly numbers."))
        assert disguised.document.detected_type == "pdf"
        assert disguised.extractor == "pypdf"
        renamed = self.ingest("slides.pdf", b"just plain words, not a PDF at all")
        assert renamed.document.detected_type == "text"

    def test_subrip_is_told_by_its_first_cue_whatever_the_line_endings(self) -> None:
        from ingest.converters import sniff

        for opening in ("1\n00:00:01,000 --> ", "\r\n\n  7 \r\n\t00:00:01.500\t--> ", "\ufeff1\r\n00:00:01,000 -->"):
            assert sniff(f"{opening}00:00:04,000\nHello.\n".encode()) == "srt", repr(opening)
        assert sniff(b"1\n\n00:00:01,000 --> 00:00:04,000\nA blank line between.\n") == "srt"
        assert sniff(b"1 of our notes\n00:00:01,000 --> 00:00:04,000\n") == "text"
        # A run of line breaks after a number: every split of it was tried (40 KB took 17 s, in
        # the request); bench/hostile.py measures it beside ordinary text.
        assert sniff(b"1" + b"\n" * 200_000 + b"x") == "text"

    def test_the_queue_carries_ids_only(self) -> None:
        with (
            mock.patch.object(tasks.extraction_run_task, "delay") as delay,
            self.captureOnCommitCallbacks(execute=True),
        ):
            extraction = document_ingest(actor=self.alice, filename="notes.txt", data=BODY.encode())
        delay.assert_called_once_with(extraction.pk)

    def test_the_same_bytes_twice_are_stored_and_extracted_once(self) -> None:
        data = FILES["contract.pdf"][1]()
        first = self.ingest("contract.pdf", data)
        again = document_ingest(actor=self.alice, filename="copy-of-contract.pdf", data=data, enqueue=False)
        assert again.pk == first.pk
        assert Document.objects.count() == 1
        assert Extraction.objects.count() == 1
        assert default_storage.exists(first.document.storage_name)

    def test_the_same_bytes_from_someone_who_cannot_see_the_first_capture_reveal_nothing(self) -> None:
        data = FILES["notes.md"][1]()
        mine = self.ingest("notes.md", data)
        grant_issue(actor=SYSTEM, member=self.bob, path="captures/bob/", permission="suggest")  # not alice's
        theirs = document_ingest(actor=self.bob, filename="notes.md", data=data, key="bob/notes", enqueue=False)
        assert theirs.pk != mine.pk
        assert theirs.document.source.key != mine.document.source.key
        assert theirs.document.storage_name == mine.document.storage_name  # one stored original
        with pytest.raises(Source.DoesNotExist):
            source_get_visible(principal=self.bob, key=mine.document.source.key)

    def test_bad_inputs_are_refused_or_fail_with_a_reason_keeping_the_bytes(self) -> None:
        with pytest.raises(ValidationError, match="unsupported file"):
            document_ingest(actor=self.alice, filename="x.bin", data=bytes(range(256)) * 4, enqueue=False)
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("readme.txt", "hi")
        with pytest.raises(ValidationError, match="not a Word document"):
            document_ingest(actor=self.alice, filename="x.zip", data=archive.getvalue(), enqueue=False)
        with (
            override_settings(BRAIN_INGEST_LIMITS={**self.limits(), "MAX_BYTES": 100}),
            pytest.raises(ValidationError, match="limit"),
        ):
            document_ingest(actor=self.alice, filename="big.txt", data=b"x" * 101, enqueue=False)
        # Fields are bounded before the secret detector reads them (a form may carry megabytes).
        with pytest.raises(ValidationError, match="file name is longer than 255"):
            document_ingest(actor=self.alice, filename="n" * 300 + ".txt", data=b"notes", enqueue=False)
        with pytest.raises(ValidationError, match="key is at most 200"):
            document_ingest(actor=self.alice, filename="n.txt", data=b"notes", key="k" * 201, enqueue=False)
        assert Source.objects.count() == 0  # nothing half-written
        titled = document_ingest(actor=self.alice, filename="n.txt", data=b"notes", enqueue=False,
                                 title="Minutes " + " " * 50_000 + "password: hunter2-prod")  # fmt: skip
        assert titled.document.source.title == "Minutes"  # stored as cut to its column, as before

        damaged = self.ingest("broken.pdf", b"%PDF-1.4\nthis is not really a pdf\n%%EOF")
        assert damaged.status == "failed"
        assert "could not be read" in damaged.error
        assert default_storage.exists(damaged.document.storage_name)  # the original is kept

        from pypdf import PdfReader, PdfWriter

        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes("secret plans"))))
        writer.encrypt("hunter2", algorithm="RC4-128")
        locked = io.BytesIO()
        writer.write(locked)
        encrypted = self.ingest("locked.pdf", locked.getvalue())
        assert encrypted.status == "failed"
        assert "encrypted" in encrypted.error

        bomb = io.BytesIO()
        with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
            zipped.writestr("[Content_Types].xml", "<Types/>")
            zipped.writestr("word/document.xml", "0" * 30_000_000)
        exploded = self.ingest("bomb.docx", bomb.getvalue())
        assert exploded.status == "failed"
        assert "zip bomb" in exploded.error

        with override_settings(BRAIN_INGEST_LIMITS={**self.limits(), "MAX_PAGES": 2}):
            long = self.ingest("long.pdf", pdf_bytes("page", pages=3))
        assert long.status == "failed"
        assert "pages" in long.error

    def test_a_file_without_any_text_fails_saying_so_instead_of_done_with_nothing(self) -> None:
        for filename, data, hint in (
            ("impossible.vtt", b"WEBVTT\n\n00:00:99.000 --> 00:00:01.000\nHello\n", "cue"),
            ("blank.txt", b"  \n\t\n", "no text"),
            ("script.html", b"<html><body><script>var a = 1;</script></body></html>", "visible text"),
            ("scan.pdf", pdf_bytes("", pages=1), "OCR"),
        ):
            with self.subTest(filename):
                extraction = self.ingest(filename, data)
                assert extraction.status == "failed"
                assert "no text was found" in extraction.error
                assert hint in extraction.error
                assert extraction.document.source.text == ""
                assert default_storage.exists(extraction.document.storage_name)  # the original is kept

    def test_a_failed_extraction_can_be_retried(self) -> None:
        with override_settings(BRAIN_INGEST_LIMITS={**self.limits(), "MAX_CHARS": 10}):
            failed = self.ingest("notes.txt", BODY.encode())
        assert failed.status == "failed"
        extraction_retry(actor=self.alice, extraction_id=failed.pk)
        extraction_run(failed.pk)
        failed.refresh_from_db()
        assert failed.status == "done"
        assert failed.attempts == 1  # counted again from the person's retry (ingest.services.MAX_ATTEMPTS)

    def test_the_capture_follows_the_grants(self) -> None:
        extraction = self.ingest("notes.md", FILES["notes.md"][1]())
        key = extraction.document.source.key
        assert source_get_visible(principal=self.alice, key=key).key == key
        with pytest.raises(Source.DoesNotExist):
            source_get_visible(principal=self.bob, key=key)
        assert list(source_list_visible(principal=self.bob)) == []
        assert list(source_search(principal=self.bob, query="Northwind renewal")) == []
        assert [s.key for s in source_search(principal=self.alice, query="Northwind renewal")] == [key]
        with pytest.raises(PermissionDenied):
            document_ingest(actor=self.bob, filename="b.txt", data=b"bob's upload", enqueue=False)

    def test_extracted_text_is_embedded_for_search_by_meaning_and_never_twice(self) -> None:
        from corpus.models import SourceChunk

        text = "# Office hours\n\nThe Tokyo office opens at nine in the morning and closes at six.\n"
        extraction = self.ingest("tokyo.md", text.encode())
        key = extraction.document.source.key
        assert SourceChunk.objects.filter(source__key=key, embedding__isnull=False).count() >= 1
        found = [s.key for s in source_search(principal=self.alice, query="what time does the Japan team start work")]
        assert found == [key]  # no shared word but "the": the semantic arm found it
        assert source_search(principal=self.alice, query="quarterly tax filing for the Brazilian subsidiary") == []
        chunks = SourceChunk.objects.count()
        document_ingest(actor=self.alice, filename="again.md", data=text.encode(), enqueue=False)
        assert SourceChunk.objects.count() == chunks

    def test_with_the_embedder_down_the_text_is_stored_and_found_by_words(self) -> None:
        from brain import embeddings
        from corpus.models import SourceChunk
        from corpus.search import query_vector_cache

        query_vector_cache.clear()

        def down(texts):  # type: ignore[no-untyped-def]
            raise embeddings.EmbeddingError("embedding endpoint failed (ConnectionError)")

        with mock.patch.object(embeddings, "embed", side_effect=down):
            extraction = self.ingest("notes.txt", b"Quarterly renewal figures for Northwind.")
            assert extraction.status == "done"
            found = [s.key for s in source_search(principal=self.alice, query="Northwind renewal")]
        assert found == [extraction.document.source.key]
        assert SourceChunk.objects.filter(embedding__isnull=True).count() == 1

        # Once the embedder is back, the periodic task fills the vectors: found by meaning.
        from ingest.tasks import source_chunks_backfill_task

        source_chunks_backfill_task()
        assert SourceChunk.objects.filter(embedding__isnull=True).count() == 0
        found = [s.key for s in source_search(principal=self.alice, query="subscription renewal statistics by quarter")]
        assert found == [extraction.document.source.key]

    def test_vectors_of_a_former_model_are_ignored_until_re_embedded(self) -> None:
        from corpus.models import SourceChunk
        from ingest.tasks import source_chunks_backfill_task

        text = "# Office hours\n\nThe Tokyo office opens at nine in the morning and closes at six.\n"
        key = self.ingest("tokyo.md", text.encode()).document.source.key
        SourceChunk.objects.update(embedding_model="a-former-model")
        question = "what time does the Japan team start work"
        assert source_search(principal=self.alice, query=question) == []  # no words in common, no usable vector
        source_chunks_backfill_task()
        assert set(SourceChunk.objects.values_list("embedding_model", flat=True)) == {embeddings_model_id()}
        assert [s.key for s in source_search(principal=self.alice, query=question)] == [key]

    def test_the_command_ingests_with_a_progress_bar_and_reports_failures(self) -> None:
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as folder:
            good = Path(folder) / "notes.md"
            good.write_bytes(FILES["notes.md"][1]())
            bad = Path(folder) / "broken.pdf"
            bad.write_bytes(b"%PDF-1.4 garbage")
            out = io.StringIO()
            with pytest.raises(SystemExit):
                call_command("source_ingest", str(good), str(bad), "--as", "alice", stdout=out, stderr=io.StringIO())
        lines = out.getvalue().splitlines()
        assert lines[0].startswith("[###############...............] 1/2 notes.md → uploads/")
        assert lines[0].endswith(": done")
        assert "2/2 broken.pdf" in lines[1]
        assert "failed: the PDF could not be read" in lines[1]

    @staticmethod
    def limits() -> dict[str, int]:
        from django.conf import settings

        return dict(settings.BRAIN_INGEST_LIMITS)


def embeddings_model_id() -> str:
    from brain import embeddings

    return embeddings.model_id()


class IngestWebTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")
        grant_issue(actor=SYSTEM, member=cls.alice, path="captures/", permission="suggest")

    def test_upload_page_source_page_with_live_status_and_retry(self) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        self.client.force_login(self.alice.user)
        with self.captureOnCommitCallbacks(execute=False):  # the worker's part is run below
            answer = self.client.post(
                "/sources/upload",
                {"file": SimpleUploadedFile("notes.md", FILES["notes.md"][1]()), "key": "docs/renewal-notes"},
            )
        location = answer["Location"]
        assert re.fullmatch(r"/sources/docs/renewal-notes-[0-9a-f]{6}", location)  # the server's suffix
        key = location.removeprefix("/sources/")
        queued = self.client.get(location, HTTP_HX_REQUEST="true").content.decode()
        assert 'hx-trigger="every 2s"' in queued  # polls while it runs
        extraction_run(Extraction.objects.get().pk)
        page = self.client.get(location).content.decode()
        assert f"capture:{key}" in page
        assert "processed in" in page
        assert AWS_KEY not in page
        partial = self.client.get(location, HTTP_HX_REQUEST="true").content.decode()
        assert partial.startswith('<div id="extraction"')
        assert "hx-trigger" not in partial  # done: polling stops
        # Alice may add ordinary captures only: "you hold no suggest permission" was untrue.
        higher = self.client.post(
            "/sources/upload", {"file": SimpleUploadedFile("r.txt", b"restricted"), "sensitivity": "restricted"}
        )
        assert higher.status_code == 400
        assert "do not reach restricted captures (only ordinary ones)" in higher.content.decode()
        self.client.force_login(self.bob.user)
        assert self.client.get(location).status_code == 404
        refused = self.client.post("/sources/upload", {"file": SimpleUploadedFile("x.txt", b"bob's")})
        assert refused.status_code == 400
        assert "suggest" in refused.content.decode() or "may not" in refused.content.decode()

    def test_the_upload_form_is_offered_to_whom_may_upload_and_a_refusal_names_what_to_ask_for(self) -> None:
        """A member reading only topics/ was offered "Upload a document", and each try was refused
        naming a path with a new random suffix (captures/uploads/2026-12-07-256d89) nobody could grant."""
        from django.core.files.uploadedfile import SimpleUploadedFile

        self.client.force_login(self.alice.user)
        assert "Upload a document</a>" in self.client.get("/sources/").content.decode()
        self.client.force_login(self.bob.user)
        listing = self.client.get("/sources/").content.decode()
        assert "Upload a document</a>" not in listing
        assert "needs suggest permission on a folder under captures/" in listing
        assert "Ask an administrator" in self.client.get("/sources/upload").content.decode()
        refused = self.client.post("/sources/upload", {"file": SimpleUploadedFile("x.txt", b"bob's")}).content.decode()
        assert "you hold no suggest permission on captures/uploads/, where this capture would go" in refused
        assert not re.search(r"captures/uploads/\d{4}-\d\d-\d\d-[0-9a-f]{6}", refused)

    def test_failed_extraction_shows_why_and_the_uploader_can_retry(self) -> None:
        self.client.force_login(self.alice.user)
        extraction = document_ingest(actor=self.alice, filename="broken.pdf", data=b"%PDF-1.4 junk", enqueue=False)
        extraction_run(extraction.pk)
        key = extraction.document.source.key
        assert "Extraction failed: the PDF could not be read" in self.client.get(f"/sources/{key}").content.decode()
        with self.captureOnCommitCallbacks(execute=False):
            self.client.post(f"/sources/{key}/retry")
        extraction.refresh_from_db()
        assert extraction.status == "queued"

    def test_rest_upload_with_a_personal_token(self) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from memory.tokens import api_token_issue

        token = api_token_issue(actor=self.alice, name="cli")[1]
        with self.captureOnCommitCallbacks(execute=False):
            answer = self.client.post("/api/sources", {"file": SimpleUploadedFile("call.vtt", FILES["call.vtt"][1]())},
                                      HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert answer.status_code == 202
        body = answer.json()
        assert body["citation"].startswith("capture:uploads/")
        assert body["extraction"]["status"] == "queued"
        assert body["extraction"]["region"]
        status = self.client.get(body["status_url"], HTTP_AUTHORIZATION=f"Bearer {token}")
        assert status.json()["extraction"]["id"] == body["extraction"]["id"]
        bob = api_token_issue(actor=self.bob, name="cli")[1]
        assert self.client.get(body["status_url"], HTTP_AUTHORIZATION=f"Bearer {bob}").status_code == 404
        assert self.client.post("/api/sources", {}, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 400
        assert self.client.post("/api/sources", {}).status_code == 401
        with override_settings(BRAIN_INGEST_LIMITS={**IngestTests.limits(), "MAX_BYTES": 10}):
            big = self.client.post("/api/sources", {"file": SimpleUploadedFile("big.txt", b"x" * 11)},
                                   HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert big.status_code == 400
        assert "the limit is 10" in big.json()["error"]["message"]
