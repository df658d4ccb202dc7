"""The materialised corpus: what one reader may read, as Markdown they can use without Brain."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from django.test import Client

from corpus.export import corpus_files, zip_stream
from corpus.figures import figure_record
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue
from memory.tokens import api_token_issue
from tests.archives import zip_of
from tests.base import DISCOUNT_POLICY, BrainTestCase, capture, page_markdown, publish


def unzip(data: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name).decode("utf-8") for name in archive.namelist()}


class ExportTests(BrainTestCase):
    def setUp(self) -> None:
        self.notes_grant = grant_issue(actor=SYSTEM, member=self.bob, path="captures/notes/", permission="read")
        capture("notes/kickoff", title="Kickoff", text="We agreed on Thursdays.")
        capture("secret/board", title="Board minutes", text="Hidden.")
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")
        publish(
            "topics/pricing/price-list.md", title="Price list", sources=["notes/kickoff", "secret/board"],
            related=[DISCOUNT_POLICY], body="# Price list\n\nTeam plan: 12 EUR a seat.\n",
        )  # fmt: skip
        publish("topics/onboarding.md", title="Onboarding")

    def export(self, member: object) -> dict[str, str]:
        return unzip(b"".join(zip_stream(corpus_files(member))))  # type: ignore[arg-type]

    def test_a_member_gets_only_what_they_can_read_and_no_hidden_name(self) -> None:
        files = self.export(self.bob)
        assert set(files) == {
            "topics/pricing/price-list.md", "topics/onboarding.md", "captures/notes/kickoff.md", "figures.yml",
            "README.md",
        }  # fmt: skip
        price_list = files["topics/pricing/price-list.md"]
        assert DISCOUNT_POLICY not in price_list  # a related page bob cannot read is not named
        assert "secret/board" not in price_list
        assert "capture:notes/kickoff" in price_list
        assert price_list.startswith("---\n")
        assert "Team plan: 12 EUR a seat." in price_list
        assert "We agreed on Thursdays." in files["captures/notes/kickoff.md"]
        assert "[Price list](topics/pricing/price-list.md)" in files["README.md"]
        alice = self.export(self.alice)
        assert DISCOUNT_POLICY in alice
        assert DISCOUNT_POLICY in alice["topics/pricing/price-list.md"]

    def test_frontmatter_as_written_when_it_names_nothing_hidden(self) -> None:
        publish("topics/plain.md", title="Plain")
        written = page_markdown(title="Plain")
        assert self.export(self.bob)["topics/plain.md"].startswith(written.split("\n---\n")[0])

    def test_the_same_corpus_gives_the_same_bytes(self) -> None:
        first = b"".join(zip_stream(corpus_files(self.bob)))
        second = b"".join(zip_stream(corpus_files(self.bob)))
        assert first == second
        with zipfile.ZipFile(io.BytesIO(first)) as archive:
            assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}

    def test_figures_current_and_history(self) -> None:
        import datetime as dt

        for value, as_of in (("12", dt.date(2026, 1, 1)), ("14", dt.date(2026, 6, 1))):
            figure_record(actor=SYSTEM, page_path="topics/pricing/price-list.md", key="seat-price", value=value,
                          unit="EUR", as_of=as_of)  # fmt: skip
        figures = self.export(self.bob)["figures.yml"]
        assert "seat-price" in figures
        assert "current:" in figures
        assert "'14'" in figures or "14" in figures

    def test_figure_values_recorded_while_the_page_was_restricted_stay_out_of_a_readers_history(self) -> None:
        import datetime as dt

        import yaml

        path = "topics/pricing/margins.md"
        publish(path, title="Margins", category="pricing", sensitivity="restricted")
        grant_issue(actor=SYSTEM, member=self.alice, path=path, permission="read")  # alice reads it, bob does not
        figure_record(actor=SYSTEM, page_path=path, key="margin", value="31", unit="%", as_of=dt.date(2026, 1, 1))
        publish(path, title="Margins", body="# Margins\n\nNow for everyone.\n")  # opened to every reader
        figure_record(actor=SYSTEM, page_path=path, key="margin", value="28", unit="%", as_of=dt.date(2026, 6, 1))
        bobs = yaml.safe_load(self.export(self.bob)["figures.yml"])[path]["margin"]
        assert bobs["current"]["value"] == "28"
        assert [entry["value"] for entry in bobs["history"]] == ["28"]  # 31 was written where bob could not read
        alices = yaml.safe_load(self.export(self.alice)["figures.yml"])[path]["margin"]
        assert [entry["value"] for entry in alices["history"]] == ["31", "28"]

    def test_a_figure_never_names_a_capture_the_reader_cannot_read(self) -> None:
        import datetime as dt

        from brain.callers import PERSON, Caller
        from mcp_api.tools.corpus import FigureArgs, read_figure

        figure_record(actor=SYSTEM, page_path="topics/pricing/price-list.md", key="seat-price", value="14",
                      unit="EUR", as_of=dt.date(2026, 6, 1), source_key="secret/board")  # fmt: skip
        assert "secret/board" not in self.export(self.bob)["figures.yml"]
        seen = read_figure(Caller(principal=self.bob, kind=PERSON), FigureArgs(key="seat-price"))
        assert seen.source is None
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="read")
        assert read_figure(Caller(principal=self.alice, kind=PERSON), FigureArgs(key="seat-price")).source == (
            "capture:secret/board"
        )

    def test_a_page_and_a_capture_never_share_a_file_name(self) -> None:
        publish("captures/notes/kickoff.md", title="A page where a capture would go")
        grant_issue(actor=SYSTEM, member=self.bob, path="captures/notes/kickoff.md", permission="read")
        files = self.export(self.bob)
        assert "A page where a capture would go" in files["captures/notes/kickoff.md"]
        assert "We agreed on Thursdays." in files["captures/notes/kickoff~2.md"]

    def test_no_name_is_both_a_file_and_a_folder_so_every_export_unpacks(self) -> None:
        grant_issue(actor=SYSTEM, member=self.bob, path="", permission="read")
        publish("figures.yml/a.md", title="A page under a folder named like the figures file")
        publish("readme/b.md", title="Beside README")
        capture("x", title="Capture x", text="Plain x.")
        capture("x.md/y", title="Capture y", text="Under x.md.")
        data = b"".join(zip_stream(corpus_files(self.bob)))
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
        lowered = [name.lower() for name in names]
        folders = {"/".join(name.split("/")[:end]) for name in lowered for end in range(1, name.count("/") + 1)}
        assert not folders & set(lowered), sorted(folders & set(lowered))
        assert len(set(lowered)) == len(lowered)
        assert {"figures.yml/a.md", "captures/x.md", "figures~2.yml"} <= set(names)
        assert "captures/x.md~2/y.md" in names
        self.export(self.bob)  # and it unpacks

    def test_the_rest_export_streams_and_is_audited(self) -> None:
        token = api_token_issue(actor=self.bob, name="cli", scopes=["corpus:read"])[1]
        response = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/export")
        assert response.status_code == 200
        assert response.streaming
        assert response["Content-Type"] == "application/zip"
        files = unzip(b"".join(response.streaming_content))
        assert "topics/onboarding.md" in files
        assert DISCOUNT_POLICY not in files
        event = AuditEvent.objects.get(action="corpus.export")
        assert event.actor_label == "bob"
        assert event.metadata["files"] == len(files)
        assert event.metadata["completed"] is True
        memory_only = api_token_issue(actor=self.bob, name="m", scopes=["memory"])[1]
        assert Client(HTTP_AUTHORIZATION=f"Bearer {memory_only}").get("/api/v1/export").status_code == 403

    def test_originals_only_on_request_and_only_of_readable_captures(self) -> None:
        from ingest.services import document_ingest

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        document_ingest(actor=self.alice, filename="../Kickoff notes.txt", data=b"original bytes, as uploaded",
                        key="notes/upload", enqueue=False)  # fmt: skip
        document_ingest(actor=self.alice, filename="board.pdf", data=b"%PDF-1.4 hidden", key="secret/up", enqueue=False)
        token = api_token_issue(actor=self.bob, name="cli", scopes=["corpus:read"])[1]
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        plain = client.get("/api/v1/export")
        with zipfile.ZipFile(io.BytesIO(b"".join(plain.streaming_content))) as archive:
            assert not any(name.startswith("originals/") for name in archive.namelist())
        response = client.get("/api/v1/export?originals=true")
        assert response.status_code == 200
        with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
            originals = {name: archive.read(name) for name in archive.namelist() if name.startswith("originals/")}
            readme = archive.read("README.md").decode()
        key = next(name for name in originals).split("/")[1:-1]
        assert list(originals.values()) == [b"original bytes, as uploaded"]  # bob cannot read secret/
        assert next(iter(originals)).endswith("/Kickoff notes.txt"), originals  # one path segment, no '..'
        assert key[0] == "notes"
        assert "1 original files under `originals/`" in readme
        assert int(response["X-Brain-Export-Files"]) == len(self.export(self.bob)) + 1  # + the original
        assert client.get("/api/v1/export?originals=maybe").status_code == 400

    def test_an_export_edited_and_zipped_again_imports_as_the_one_change(self) -> None:
        """Download everything, edit one page, upload the zip as an import: it was refused whole
        (the README and every capture read as broken pages; every unchanged page asked for
        ``suggest``). Now the one edit is the build; zipped inside its folder, it says so."""
        from builds.models import Build, BuildJobItem

        grant_issue(actor=SYSTEM, member=self.bob, path="topics/pricing/", permission="suggest")
        files = self.export(self.bob)
        assert {"README.md", "captures/notes/kickoff.md", "topics/onboarding.md"} <= set(files)
        edited = files["topics/pricing/price-list.md"].replace("12 EUR a seat", "13 EUR a seat")
        assert edited != files["topics/pricing/price-list.md"]
        token = api_token_issue(actor=self.bob, name="cli", scopes=["corpus:read", "builds:write"])[1]
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

        def upload(tree: dict[str, str]) -> Any:
            buffer = io.BytesIO(zip_of(tree))
            buffer.name = "corpus.zip"
            return client.post("/api/v1/builds/import", {"archive": buffer})

        unchanged = upload(files)
        assert unchanged.status_code == 400
        assert "nothing in it changes a page" in unchanged.content.decode()
        wrapped = upload(
            {f"brain-export/{name}": text for name, text in {**files, "topics/pricing/price-list.md": edited}.items()}
        )
        assert wrapped.status_code == 400
        assert "zipped inside its folder (brain-export/)" in wrapped.content.decode()
        assert not Build.objects.exists()
        answer = upload({**files, "topics/pricing/price-list.md": edited})
        assert answer.status_code == 202, answer.content.decode()
        assert answer.json()["files"] == 1
        assert list(BuildJobItem.objects.values_list("path", flat=True)) == ["topics/pricing/price-list.md"]

    def test_an_original_missing_from_storage_is_counted_nowhere(self) -> None:
        """The file count the download announces and the README were made from the rows: an
        original lost from storage was counted (4 announced, 3 sent; the progress never ended)."""
        from django.core.files.storage import default_storage

        from ingest.models import Document
        from ingest.services import document_ingest

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        document_ingest(actor=self.alice, filename="a.txt", data=b"lost bytes", key="notes/a", enqueue=False)
        default_storage.delete(Document.objects.get().storage_name)
        token = api_token_issue(actor=self.bob, name="cli", scopes=["corpus:read"])[1]
        with self.assertLogs("ingest.originals", "WARNING"):
            response = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/export?originals=true")
            files = unzip(b"".join(response.streaming_content))
        assert int(response["X-Brain-Export-Files"]) == len(files)
        assert not any(name.startswith("originals/") for name in files)
        assert "original files" not in files["README.md"]

    def test_an_originals_long_name_fits_a_file_system_and_keeps_its_suffix(self) -> None:
        """Cut at 120 characters, 150 CJK characters made a 360-byte name (file systems hold
        255), which would not unpack, and lost its ".txt"."""
        from ingest.services import document_ingest

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        document_ingest(actor=self.alice, filename="議事録" * 50 + ".txt", data=b"minutes", key="notes/minutes",
                        enqueue=False)  # fmt: skip
        document_ingest(actor=self.alice, filename="議事録" * 50 + ".txt", data=b"minutes 2", key="notes/minutes2",
                        enqueue=False)  # fmt: skip
        token = api_token_issue(actor=self.alice, name="cli", scopes=["corpus:read"])[1]
        response = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/export?originals=true")
        with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
            originals = [name for name in archive.namelist() if name.startswith("originals/")]
        assert len(originals) == 2
        for name in originals:
            assert name.endswith(".txt")
            assert max(len(segment.encode()) for segment in name.split("/")) <= 255
            assert name.rsplit("/", 1)[-1].startswith("議事録")

    def test_what_the_reader_loses_while_an_export_runs_stays_out_of_its_last_files(self) -> None:
        """Originals and README.md are written last, minutes into a slow download."""
        from corpus.export import corpus_plan, corpus_render
        from grants.services import grant_revoke
        from ingest.services import document_ingest

        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        document_ingest(actor=self.alice, filename="plan.txt", data=b"TOP SECRET original bytes",
                        key="notes/upload", enqueue=False)  # fmt: skip
        layoffs = grant_issue(actor=SYSTEM, member=self.bob, path="hr/layoffs.md", permission="read")
        publish("hr/layoffs.md", title="Layoff list Q1")
        plan = corpus_plan(self.bob, originals=True)
        assert {"original", "page"} <= {entry.kind for entry in plan}
        assert "Layoff list Q1" in next(e for e in plan if e.kind == "page" and e.subject == "hr/layoffs.md").title
        grant_revoke(actor=SYSTEM, grant=self.notes_grant)
        grant_revoke(actor=SYSTEM, grant=layoffs)
        files = {rendered.file.path: rendered.file.data for rendered in corpus_render(self.bob, plan)}
        assert not [name for name in files if name.startswith(("originals/", "captures/", "hr/"))]
        readme = files["README.md"].decode()
        assert "Layoff" not in readme
        assert "hr/layoffs.md" not in readme
        assert "0 captures" in readme

    def test_the_browse_page_offers_the_download(self) -> None:
        browser = Client()
        browser.force_login(self.bob.user)
        assert "/api/v1/export" in browser.get("/pages/").content.decode()
        download = browser.get("/api/v1/export")
        assert download.status_code == 200
        assert "topics/onboarding.md" in unzip(b"".join(download.streaming_content))
