"""The real ``brain`` executable failing as a script expects: one line on stderr, the right exit code,
a download cut short never saved over a good one, a password in a URL never printed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from unittest import mock

from django.test import LiveServerTestCase

from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.services import memory_remember
from memory.tokens import api_token_issue
from tests.base import publish
from tests.cli.conftest import Handler
from tests.fakes import respond

BRAIN = str(Path(sys.executable).with_name("brain"))


def brain(
    home: Path,
    *args: str,
    url: str | None = None,
    token: str = "bmt_unknown",  # noqa: S107 - a made-up token
) -> subprocess.CompletedProcess[bytes]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    environment.update({"BRAIN_CONFIG_DIR": str(home), "NO_COLOR": "1"})
    if url:
        environment.update({"BRAIN_URL": url, "BRAIN_TOKEN": token})
    return subprocess.run([BRAIN, *args], capture_output=True, timeout=60, env=environment, stdin=subprocess.DEVNULL,
                          cwd=home)  # fmt: skip


def assert_one_line(result: subprocess.CompletedProcess[bytes]) -> None:
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert stderr.startswith("brain: "), (result.returncode, stderr, result.stdout[:200])
    assert stderr.count("\n") == 1, (result.returncode, stderr, result.stdout[:200])


def read_body(request: BaseHTTPRequestHandler) -> None:
    request.rfile.read(int(request.headers.get("Content-Length", "0") or "0"))


def question_server(status: str) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        read_body(request)
        body = {"question_id": "q1", "status": status, "answer": "", "citations": [],
                "refusal_reason": "No page supports an answer."}  # fmt: skip
        respond(request, 201 if request.command == "POST" else 200, "application/json", json.dumps(body).encode())

    return handle


def test_a_refused_question_is_a_failure_said_on_stderr(serve: Any, tmp_path: Path) -> None:
    result = brain(tmp_path, "ask", "who approves?", url=serve(question_server("refused")))
    assert result.returncode == 1
    assert_one_line(result)  # it went to stdout, stderr empty


def test_an_answer_still_pending_at_timeout_is_said_on_stderr(serve: Any, tmp_path: Path) -> None:
    result = brain(tmp_path, "ask", "who?", "--timeout", "1", url=serve(question_server("queued")))
    assert result.returncode == 5
    assert_one_line(result)


def test_a_refused_upload_in_a_script_is_one_line_on_stderr(serve: Any, tmp_path: Path) -> None:
    def handle(request: BaseHTTPRequestHandler) -> None:
        read_body(request)
        body = {"error": {"code": "invalid", "message": "The file is empty.", "request_id": "r"}}
        respond(request, 400, "application/json", json.dumps(body).encode())

    document = tmp_path / "notes.md"
    document.write_text("# Notes\n\n" + "words " * 2000)
    result = brain(tmp_path, "upload", str(document), url=serve(handle))
    assert result.returncode == 1
    assert_one_line(result)  # no progress bar on a stderr that is no terminal


def test_setup_never_echoes_a_password_given_in_the_url(tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    result = brain(tmp_path, "setup", "--url", f"http://admin:hunter2-secret@127.0.0.1:{port}", "--token", "bmt_x")
    assert result.returncode == 2  # refused before anything is sent
    assert b"hunter2-secret" not in result.stderr, result.stderr
    assert_one_line(result)
    # ... and from the environment, for every command.
    result = brain(tmp_path, "stats", url=f"http://admin:hunter2-secret@127.0.0.1:{port}", token="bmt_x")
    assert result.returncode == 3
    assert b"hunter2-secret" not in result.stderr, result.stderr


def test_bad_usage_is_exit_2_even_before_setup(tmp_path: Path) -> None:
    for args in (["get", "count"], ["share", "count"], ["forget", "--yes", "count"],
                 ["export", "-o", str(tmp_path / "no" / "x.zip")]):  # fmt: skip
        result = brain(tmp_path, *args)
        assert result.returncode == 2, (args, result.returncode, result.stderr)


class ExportCutShortTests(LiveServerTestCase):
    def test_an_export_the_server_fails_mid_way_is_not_saved_as_a_good_one(self) -> None:
        alice = member_create(actor=SYSTEM, username="alice")
        grant_issue(actor=SYSTEM, member=alice, path="topics/", permission="read")
        for number in range(3):
            publish(f"topics/p{number}.md", title=f"P{number}")
        token = api_token_issue(actor=alice, name="cli", scopes=["corpus:read"])[1]
        home = Path(tempfile.mkdtemp(prefix="cli-"))
        target = home / "corpus.zip"
        target.write_bytes(b"the previous, good export")
        # Anything that fails after the first bytes were sent (the database going away, a bug).
        with mock.patch("corpus.export._readme", side_effect=RuntimeError("database went away")):
            result = brain(home, "export", "-o", str(target), url=self.live_server_url, token=token)
        assert result.returncode != 0, (result.returncode, result.stderr)  # exit 0: "Wrote 629 bytes"
        assert target.read_bytes() == b"the previous, good export"  # replaced by a zip with no directory


def test_a_password_in_a_url_without_a_scheme_is_never_printed(tmp_path: Path) -> None:
    """'admin:pw@host' (no scheme) passed the check for user info after '://', and the
    failure message 'cannot reach <url>/api/v1' printed the password."""
    result = brain(tmp_path, "setup", "--url", "admin:hunter2-secret@127.0.0.1:9", "--token", "bmt_x")
    assert b"hunter2-secret" not in result.stderr, result.stderr
    result = brain(tmp_path, "stats", url="admin:hunter2-secret@127.0.0.1:9", token="bmt_x")
    assert b"hunter2-secret" not in result.stderr, result.stderr


class MemoryExportCutShortTests(LiveServerTestCase):
    def test_a_memories_export_the_server_fails_mid_way_is_not_saved_as_a_good_one(self) -> None:
        """The server writes one line per chunk, so a stream cut by a failure ends at a newline:
        a last newline alone called it whole, and the cut file replaced the previous export."""
        alice = member_create(actor=SYSTEM, username="alice")
        for text in ("First fact about staging.", "Second fact about billing.", "Third fact about Tokyo."):
            memory_remember(actor=alice, content=text)
        token = api_token_issue(actor=alice, name="cli", scopes=["memory"])[1]
        home = Path(tempfile.mkdtemp(prefix="cli-"))
        target = home / "memories.jsonl"
        target.write_bytes(b'{"previous": "good export"}\n')
        from memory import api as memory_api

        real = memory_api.serialise
        calls = {"n": 0}

        def failing(memory):  # the database going away after the first line
            calls["n"] += 1
            if calls["n"] > 1:
                raise RuntimeError("database went away")
            return real(memory)

        with mock.patch("memory.api.serialise", side_effect=failing):
            result = brain(home, "export", "--memories", "-o", str(target), url=self.live_server_url, token=token)
        assert result.returncode != 0, (result.returncode, result.stderr)
        assert target.read_bytes() == b'{"previous": "good export"}\n'


class CorpusExportCutAfterADocxTests(LiveServerTestCase):
    def test_an_export_cut_right_after_a_word_original_is_not_saved_as_a_good_one(self) -> None:
        """zipfile finds an end record anywhere in the last 64 KB: a .docx original (itself a
        zip) ends with one, so an export cut just after it read as whole and replaced the
        previous good one."""
        import io
        import os
        import zipfile

        from ingest.services import document_ingest

        alice = member_create(actor=SYSTEM, username="alice")
        from grants.services import grant_issue

        grant_issue(actor=SYSTEM, member=alice, path="captures/", permission="suggest")
        inner = io.BytesIO()
        with zipfile.ZipFile(inner, "w", zipfile.ZIP_STORED) as docx:
            docx.writestr("word/document.xml", os.urandom(20_000))
        document_ingest(actor=alice, filename="report.docx", data=inner.getvalue(), key="notes/report", enqueue=False)
        token = api_token_issue(actor=alice, name="cli", scopes=["corpus:read"])[1]
        home = Path(tempfile.mkdtemp(prefix="cli-"))
        target = home / "corpus.zip"
        target.write_bytes(b"the previous, good export")
        with mock.patch("corpus.export._figures", side_effect=RuntimeError("database went away")):
            result = brain(home, "export", "--originals", "-o", str(target), url=self.live_server_url, token=token)
        assert result.returncode != 0, (result.returncode, result.stderr)
        assert target.read_bytes() == b"the previous, good export"
