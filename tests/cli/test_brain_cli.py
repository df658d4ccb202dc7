"""The real ``brain`` executable against a live server: every command, ``--json`` parsed,
and failures as one line with a meaningful exit code."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from django.test import LiveServerTestCase

from brain.celery import app as celery_app
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.services import memory_remember
from memory.tokens import api_token_issue
from tests.base import publish
from tests.fakes import respond

BRAIN = str(Path(sys.executable).with_name("brain"))


class BrainCliTests(LiveServerTestCase):
    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com", password="pw-alice-123")
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="read")
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        publish(
            "topics/pricing/discounts.md", title="Discounts",
            body="# Discounts\n\n## Approval\n\nA discount above 12% is approved by the finance lead.\n",
        )  # fmt: skip
        self.token = api_token_issue(actor=self.alice, name="cli")[1]
        self.home = Path(tempfile.mkdtemp(prefix="brain-cli-"))
        self.addCleanup(shutil.rmtree, self.home, True)
        # Questions are answered by a worker; here the task runs where it is queued.
        celery_app.conf.task_always_eager = True
        self.addCleanup(setattr, celery_app.conf, "task_always_eager", False)

    def brain(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith(("BRAIN_URL", "BRAIN_TOKEN"))
        }
        environment.update({"BRAIN_CONFIG_DIR": str(self.home), "NO_COLOR": "1", "COLUMNS": "200", **(env or {})})
        return subprocess.run(
            [BRAIN, *args], capture_output=True, text=True, timeout=120, env=environment, stdin=subprocess.DEVNULL
        )

    def ok(self, *args: str) -> Any:
        result = self.brain("--json", *args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return json.loads(result.stdout)

    def test_every_command_against_a_live_server(self) -> None:
        saved = self.ok("setup", "--url", self.live_server_url, "--token", self.token)
        config = Path(saved["saved"])
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert json.loads(config.read_text())["token"] == self.token

        piped = subprocess.run([BRAIN, "--json", "remember", "-"], input="The wiki moved to\nwiki.example.org.",
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, "BRAIN_CONFIG_DIR": str(self.home)})  # fmt: skip
        assert piped.returncode == 0, piped.stderr
        assert self.ok("get", json.loads(piped.stdout)["id"])["content"] == "The wiki moved to\nwiki.example.org."
        self.ok("forget", "--yes", json.loads(piped.stdout)["id"])
        stored = self.ok("remember", "We", "ship", "on", "Thursdays.", "--tag", "release")
        assert stored["outcome"] == "stored"
        memory_id = stored["id"]
        assert self.ok("get", memory_id)["content"] == "We ship on Thursdays."
        assert self.ok("recall", "when do we ship")["results"][0]["id"] == memory_id
        assert [m["id"] for m in self.ok("list")["results"]] == [memory_id]
        assert "company" in self.ok("share", memory_id)["message"]
        assert self.ok("get", memory_id)["workspace"] == "company"
        assert self.ok("stats")["total"] == 1

        exported = self.brain("export", "--memories")
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout.splitlines()[0])["id"] == memory_id
        archive = self.home / "corpus.zip"
        written = self.ok("export", "-o", str(archive))
        assert written["bytes"] == archive.stat().st_size
        with zipfile.ZipFile(archive) as zipped:
            assert "topics/pricing/discounts.md" in zipped.namelist()
        assert self.ok("export", "--originals", "-o", str(archive))["bytes"] == archive.stat().st_size
        refused = self.brain("export", "--originals", "--memories")
        assert refused.returncode != 0
        assert "--originals goes with the corpus export" in refused.stderr

        hits = self.ok("search", "discount", "approval")["results"]
        assert hits[0]["path"] == "topics/pricing/discounts.md"

        answer = self.ok("ask", "Who approves a discount above 12%?", "--timeout", "30")
        assert answer["status"] in ("answered", "refused"), answer
        if answer["status"] == "answered":
            assert "topics/pricing/discounts.md" in " ".join(answer["citations"])

        document = self.home / "notes.md"
        document.write_text("# Kickoff\n\nWe agreed to ship on Thursdays.\n")
        uploaded = self.ok("upload", str(document))
        assert uploaded[0]["key"]
        assert uploaded[0]["existing"] is False
        again = self.brain("upload", str(document), "--title", "Another title")
        assert again.returncode == 0, again.stderr
        assert f"Already uploaded as {uploaded[0]['key']}" in again.stdout  # not silently the old capture
        # A refused file after an uploaded one: the uploaded key is still printed, then the refusal.
        second, empty = self.home / "agenda.md", self.home / "empty.md"
        second.write_text("# Agenda\n\nRelease train review.\n")
        empty.write_bytes(b"")
        partial = self.brain("--json", "upload", str(second), str(empty))
        assert partial.returncode != 0
        assert json.loads(partial.stdout)[0]["key"]
        assert "empty.md:" in partial.stderr
        assert partial.stderr.count("\n") == 1

        assert self.ok("forget", memory_id, "--yes") is not None
        missing = self.brain("get", memory_id)
        assert missing.returncode == 4
        assert missing.stderr.count("\n") == 1

        human = self.brain("search", "discount")
        assert human.returncode == 0
        assert "topics/pricing/discounts.md" in human.stdout

    def test_text_from_the_server_is_printed_as_written_never_read_as_markup(self) -> None:
        """Titles, tags and file names are other people's text: "[/bold]" in a teammate's tag
        made Rich raise (every `brain list` died with a traceback) and "[link=…]" hid text."""
        mallory = member_create(actor=SYSTEM, username="mallory")
        memory_remember(
            actor=mallory, content="Team lunch moves to Friday.", workspace="company",
            tags=["/bold", "link=https://evil.example"],
        )  # fmt: skip
        publish(
            "topics/pricing/evil.md", title="Evil [/bold] x [link=https://evil.example]click[/link]",
            body="# Evil\n\n## Summary\n\nZebra crossings are painted every spring.\n",
        )  # fmt: skip
        self.ok("setup", "--url", self.live_server_url, "--token", self.token)
        memory_id = self.ok("list")["results"][0]["id"]
        for args in (["list"], ["recall", "team", "lunch"], ["get", memory_id]):
            shown = self.brain(*args)
            assert shown.returncode == 0, (args, shown.stderr)
            assert "/bold, link=https://evil.example" in shown.stdout, (args, shown.stdout)
        found = self.brain("search", "zebra", "crossings")
        assert found.returncode == 0, found.stderr
        assert "Evil [/bold] x [link=https://evil.example]click[/link]" in found.stdout
        odd = self.home / "[bold]notes.md"  # a local name: the progress line shows it as written
        odd.write_text("# Notes\n\nThe garden gate sticks in winter.\n")
        uploaded = self.brain("upload", str(odd))
        assert uploaded.returncode == 0, uploaded.stderr

    def test_a_bad_token_is_one_line_and_a_non_zero_exit(self) -> None:
        result = self.brain("search", "x", env={"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": "bmt_not-a-token"})
        assert result.returncode == 3
        assert result.stderr.startswith("brain: ")
        assert result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr

    def test_not_set_up_unreachable_and_bad_usage(self) -> None:
        assert self.brain("list").returncode == 3
        down = self.brain("list", env={"BRAIN_URL": "http://127.0.0.1:9", "BRAIN_TOKEN": self.token})
        assert down.returncode == 5
        assert "cannot reach" in down.stderr
        assert "Traceback" not in down.stderr
        assert self.brain("remember").returncode == 2
        scoped = api_token_issue(actor=self.alice, name="memory only", scopes=["memory"])[1]
        refused = self.brain("search", "x", env={"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": scoped})
        assert refused.returncode == 3
        assert "corpus:read" in refused.stderr

    def test_a_server_that_is_not_brain_or_moved_is_one_line_never_a_traceback(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class NotBrain(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/moved"):
                    self.send_response(301)
                    self.send_header("Location", "https://brain.example.org" + self.path)
                    self.end_headers()
                    return
                body = b"<html><body>Captive portal</body></html>"
                if self.path.startswith("/down"):  # a proxy whose upstream (Brain) is down
                    self.send_response(502)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), NotBrain)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.shutdown)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        cases = [
            ({"BRAIN_URL": base + "/moved", "BRAIN_TOKEN": self.token}, ("stats",), 5, "redirects to https://"),
            ({"BRAIN_URL": base + "/moved", "BRAIN_TOKEN": self.token}, ("export", "-o", str(self.home / "x.zip")),
             5, "redirects to"),
            ({"BRAIN_URL": base, "BRAIN_TOKEN": self.token}, ("list",), 5, "did not answer as Brain does"),
            ({"BRAIN_URL": base + "/down", "BRAIN_TOKEN": self.token}, ("list",), 5, "is Brain running behind it?"),
            ({"BRAIN_URL": "http://[::1", "BRAIN_TOKEN": self.token}, ("stats",), 5, "cannot reach"),
            ({"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": self.token}, ("get", "count"), 2, "not a memory id"),
            ({"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": self.token}, ("forget", "--yes", "../x"), 2,
             "not a memory id"),
            ({"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": self.token}, ("share", "stats?x=1"), 2,
             "not a memory id"),
        ]  # fmt: skip
        previous = self.home / "previous.zip"
        previous.write_bytes(b"last week's export")
        for env, code in (({"BRAIN_URL": base + "/moved", "BRAIN_TOKEN": self.token}, 5),
                          ({"BRAIN_URL": base, "BRAIN_TOKEN": self.token}, 5),  # a login page, status 200
                          ({"BRAIN_URL": "http://127.0.0.1:9", "BRAIN_TOKEN": self.token}, 5),
                          ({"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": "bmt_expired"}, 3)):  # fmt: skip
            with self.subTest(kept_through=env):
                assert self.brain("export", "-o", str(previous), env=env).returncode == code
                assert previous.read_bytes() == b"last week's export"  # a failed download changes nothing
        assert sorted(path.name for path in self.home.iterdir() if "partial" in path.name) == []
        for env, args, code, words in cases:
            with self.subTest(args=args, url=env["BRAIN_URL"]):
                result = self.brain(*args, env=env)
                assert "Traceback" not in result.stderr, result.stderr
                assert result.stderr.startswith("brain: "), result.stderr
                assert result.stderr.count("\n") == 1, result.stderr
                assert words in result.stderr, result.stderr
                assert result.returncode == code, (result.returncode, result.stderr)

    def test_a_teammates_text_cannot_drive_the_terminal_or_forge_an_entry(self) -> None:
        forged = "9f0c0c0c-0000-4000-8000-000000000000  company  canonical  [release]"
        hostile = (
            f"Deploy notes \x1b]52;c;ZWNobyBwd25lZA==\x1b\\\x1b[8mhidden\x1b[0m\r\u202e\n{forged}\n  Ship on Fridays."
        )
        mallory = member_create(actor=SYSTEM, username="mallory")
        memory_remember(actor=mallory, content=hostile, workspace="company", tags=["release"])
        self.ok("setup", "--url", self.live_server_url, "--token", self.token)
        for args in (["list"], ["recall", "deploy", "notes"]):
            shown = self.brain(*args)
            assert shown.returncode == 0, shown.stderr
            assert not any((ord(ch) < 32 and ch != "\n") or 0x7F <= ord(ch) <= 0x9F for ch in shown.stdout), args
            assert "\u202e" not in shown.stdout
            # Every line of the memory stays indented under its own entry: no forged line.
            assert "\n9f0c0c0c" not in shown.stdout
            assert f"\n  {forged}" in shown.stdout

    def test_forget_asks_or_takes_yes_and_refusals_say_what_kind(self) -> None:
        self.ok("setup", "--url", self.live_server_url, "--token", self.token)
        mine = self.ok("remember", "The", "staging", "host", "is", "db-2.")["id"]
        piped = self.brain("forget", mine)  # stdin is not a terminal: nobody to ask
        assert piped.returncode == 2
        assert "--yes" in piped.stderr
        assert self.ok("get", mine)["id"] == mine  # still there
        bob = member_create(actor=SYSTEM, username="bob")
        shared = memory_remember(actor=bob, content="The canteen opens at eight.", workspace="company").memory
        refused = self.brain("forget", "--yes", str(shared.pk))  # a colleague's shared memory
        assert refused.returncode == 1, refused.stderr  # refused to this person, not a token problem
        assert "only the author" in refused.stderr
        wrong = self.brain("list", env={"BRAIN_URL": self.live_server_url + "/x", "BRAIN_TOKEN": self.token})
        assert wrong.returncode == 5, wrong.stderr
        assert "is the URL Brain's?" in wrong.stderr
        spaced = self.brain("--json", "list", env={"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": self.token + " "})
        assert spaced.returncode == 0, spaced.stderr

    def test_a_long_list_is_walked_page_by_page_and_a_closed_pipe_is_no_failure(self) -> None:
        for number in range(5):
            memory_remember(actor=self.alice, content=f"Note number {number} about the garden gate {number * 7}.")
        self.ok("setup", "--url", self.live_server_url, "--token", self.token)
        first = self.brain("list", "--limit", "3")
        assert first.returncode == 0, first.stderr
        assert "More: brain list --cursor " in first.stderr
        cursor = first.stderr.split("--cursor ", 1)[1].split()[0]
        rest = self.ok("list", "--limit", "3", "--cursor", cursor)["results"]
        assert len(rest) == 2
        closed = subprocess.run(["bash", "-o", "pipefail", "-c", f"{BRAIN} list --limit 5 | head -1"],
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "BRAIN_CONFIG_DIR": str(self.home)})  # fmt: skip
        assert closed.returncode == 0, closed.stderr
        assert closed.stderr == ""

    def test_the_saved_token_goes_only_to_the_saved_server_and_odd_configs_are_one_line(self) -> None:
        """BRAIN_URL alone sent the saved token to whatever it named; a config of [] or a
        non-ASCII token, and a JSON answer that is not an object, were tracebacks."""
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        heard: list[str] = []

        class Listener(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                heard.append(self.headers.get("Authorization", ""))
                respond(self, 200, "application/json", b"[1, 2]")

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Listener)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.shutdown)
        elsewhere = f"http://127.0.0.1:{server.server_address[1]}"
        (self.home / "config.json").write_text(json.dumps({"url": self.live_server_url, "token": self.token}))
        assert self.brain("--json", "stats").returncode == 0
        redirected = self.brain("stats", env={"BRAIN_URL": elsewhere})
        assert redirected.returncode == 3
        assert heard == []  # the saved token never left for the other server
        answered = self.brain("stats", env={"BRAIN_URL": elsewhere, "BRAIN_TOKEN": "bmt_for-elsewhere"})
        assert (answered.returncode, heard) == (5, ["Bearer bmt_for-elsewhere"])
        assert "did not answer as Brain does" in answered.stderr
        for content in ("[]", '"str"', "null", '{"url": 5, "token": "x"}'):
            (self.home / "config.json").write_text(content)
            broken = self.brain("list")
            assert (broken.returncode, broken.stderr.count("\n")) == (3, 1), (content, broken.stderr)
            assert "Traceback" not in broken.stderr
        odd = self.brain("list", env={"BRAIN_URL": self.live_server_url, "BRAIN_TOKEN": "bmt_sécret"})
        assert (odd.returncode, "Traceback" in odd.stderr) == (3, False)

    def test_an_interrupt_exits_130_not_the_refusal_code(self) -> None:
        """Click turned Ctrl-C into "Aborted!" and exit 1, the code of a refused request."""
        import signal
        import socket
        import time

        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        self.addCleanup(silent.close)
        environment = {key: value for key, value in os.environ.items() if not key.startswith("BRAIN_")}
        address = f"http://127.0.0.1:{silent.getsockname()[1]}"
        environment.update(
            {"BRAIN_CONFIG_DIR": str(self.home), "NO_COLOR": "1", "BRAIN_URL": address, "BRAIN_TOKEN": self.token}
        )
        waiting = subprocess.Popen([BRAIN, "stats"], env=environment, stderr=subprocess.PIPE, text=True)
        connection, _ = silent.accept()  # it is waiting for an answer that never comes
        self.addCleanup(connection.close)
        time.sleep(0.3)
        waiting.send_signal(signal.SIGINT)
        _, stderr = waiting.communicate(timeout=30)
        assert waiting.returncode == 130, stderr
        assert "Traceback" not in stderr

    def test_python_dash_m_works_too(self) -> None:
        result = subprocess.run(
            [sys.executable, "-m", "brain_cli", "--help"], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0
        assert "remember" in result.stdout
