"""The ``brain`` executable against servers that are not quite Brain — a proxy in front of it, a
service at the wrong address — and against terminals and scripts: one line on stderr, the exit
code the help promises, never a traceback. Local HTTP servers stand in for the proxies."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Handler
from tests.fakes import respond

BRAIN = str(Path(sys.executable).with_name("brain"))

MEMORY = {
    "id": "6f1c0c0c-0000-4000-8000-000000000000", "content": "Café résumé naïve — 東京", "tags": ["café"],
    "workspace": "personal", "author": "Zoë", "status": "draft", "importance": 0.5, "kind": "semantic",
    "volatility": "stable", "source": "", "recall_count": 0, "created_at": "2026-01-01T00:00:00+00:00",
    "updated_at": "2026-01-01T00:00:00+00:00",
}  # fmt: skip


def json_answer(body: Any, status: int = 200) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        respond(request, status, "application/json", json.dumps(body).encode())

    return handle


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path


def brain(home: Path, url: str, *args: str, env: dict[str, str] | None = None, timeout: int = 60) -> Any:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    environment.update({"BRAIN_CONFIG_DIR": str(home), "BRAIN_URL": url, "BRAIN_TOKEN": "bmt_probe", "NO_COLOR": "1"})
    environment.update(env or {})
    return subprocess.run(
        [BRAIN, *args], capture_output=True, timeout=timeout, env=environment, stdin=subprocess.DEVNULL
    )


def one_line_no_traceback(result: Any) -> str:
    stderr = str(result.stderr.decode("utf-8", "replace"))
    assert "Traceback" not in stderr, stderr
    assert stderr.startswith("brain: "), stderr
    assert stderr.count("\n") == 1, stderr
    return stderr


# --------------------------------------------------------------------------- non-UTF-8 terminals


@pytest.mark.parametrize("args", [("get", MEMORY["id"]), ("--json", "get", MEMORY["id"])])
def test_a_memory_with_accents_prints_on_a_non_utf8_terminal(serve: Any, home: Path, args: tuple[str, ...]) -> None:
    """A terminal or pipe whose encoding is not UTF-8 (PYTHONIOENCODING=ascii / latin-1, an old
    Windows console): the memory was fetched fine; printing it must not fail as 'unexpected
    UnicodeEncodeError' with exit 1 (the code of a server refusal)."""
    url = serve(json_answer(MEMORY))
    result = brain(home, url, *args, env={"PYTHONIOENCODING": "ascii"})
    stderr = result.stderr.decode("utf-8", "replace")
    assert "UnicodeEncodeError" not in stderr, stderr
    assert result.returncode == 0, (result.returncode, stderr)
    assert b"6f1c0c0c" in result.stdout


# --------------------------------------------------------------------------- answers not shaped as Brain's


@pytest.mark.parametrize("args", [("list",), ("recall", "x"), ("search", "x"), ("stats",), ("get", MEMORY["id"])])
def test_a_json_object_that_is_not_brains_answer_is_exit_5_not_a_refusal(
    serve: Any, home: Path, args: tuple[str, ...]
) -> None:
    """A proxy or another service answering ``{"ok": true}``: documented as exit 5 ("answers
    something that is not Brain's JSON"), never exit 1 ("the server refused the request")."""
    url = serve(json_answer({"ok": True}))
    result = brain(home, url, *args)
    stderr = one_line_no_traceback(result)
    assert "unexpected KeyError" not in stderr, stderr
    assert result.returncode == 5, (result.returncode, stderr)


# --------------------------------------------------------------------------- export


def zip_answer(data: bytes) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        respond(request, 200, "application/zip", data, **{"X-Brain-Export-Files": "3"})

    return handle


def small_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.md", "x" * 5000)
    return buffer.getvalue()


def test_an_export_into_a_missing_folder_says_which_path(serve: Any, home: Path) -> None:
    url = serve(zip_answer(small_zip()))
    target = home / "no" / "such" / "folder" / "corpus.zip"
    result = brain(home, url, "export", "-o", str(target))
    stderr = one_line_no_traceback(result)
    assert result.returncode != 0
    assert "folder" in stderr or str(target.parent) in stderr, stderr  # names what is wrong


def test_a_long_export_to_a_file_shows_progress(serve: Any, home: Path) -> None:
    """The server declares the file count (X-Brain-Export-Files) "for a progress bar"; a
    download to a file that runs for minutes should show how far it is (the upload does)."""
    url = serve(zip_answer(small_zip()))
    target = home / "corpus.zip"
    environment = {"COLUMNS": "120", "TERM": "xterm", "FORCE_COLOR": "0"}
    # A terminal on stderr is what a person has: emulate with script(1) if present.
    script = shutil.which("script")
    if script is None:
        pytest.skip("no script(1) to give the CLI a terminal")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_CONFIG_DIR": str(home), "BRAIN_URL": url, "BRAIN_TOKEN": "bmt_probe", **environment})
    command = f"{BRAIN} export -o {target}"
    result = subprocess.run([script, "-qec", command, "/dev/null"], capture_output=True, timeout=60, env=env)
    shown = result.stdout.decode("utf-8", "replace")
    assert result.returncode == 0, shown
    assert "Wrote" in shown
    # Anything besides the final line: a bar, a byte count or a file count while it runs.
    assert any(word in shown for word in ("%", "files", "━", "kB", "KB")), shown


def test_an_upload_a_proxy_refuses_as_too_large_says_so(serve: Any, home: Path) -> None:
    """nginx's default body limit answers 413 with an HTML page: the CLI said "is the URL
    Brain's?" (exit 5) for a file that was simply too large for the proxy."""

    def handle(request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length", "0"))
        request.rfile.read(length)
        respond(request, 413, "text/html", b"<html><head><title>413 Request Entity Too Large</title></head></html>")

    url = serve(handle)
    document = home / "big.md"
    document.write_text("# Big\n\n" + "words " * 2000)
    result = brain(home, url, "upload", str(document))
    stderr = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1]  # after the progress bar
    assert stderr.startswith("brain: "), stderr
    assert "is the URL Brain's" not in stderr, stderr
    assert "large" in stderr.lower(), stderr


def test_setup_without_a_terminal_and_without_its_options_is_a_usage_error(home: Path) -> None:
    """In a script (stdin not a terminal) ``brain setup`` with no --url/--token printed
    "brain: interrupted" and exited 130 — the code of a Ctrl-C — instead of naming the option."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    environment["BRAIN_CONFIG_DIR"] = str(home)
    for args in (["setup"], ["setup", "--url", "http://127.0.0.1:9"]):
        result = subprocess.run([BRAIN, *args], capture_output=True, timeout=60, env=environment,
                                stdin=subprocess.DEVNULL)  # fmt: skip
        stderr = result.stderr.decode()
        assert result.returncode == 2, (args, result.returncode, stderr)
        assert "--url" in stderr or "--token" in stderr, stderr
