"""A private Brain for fault scenarios: its own embedded PostgreSQL and Redis, migrated,
seeded and served by gunicorn — so a test or a benchmark may stop and start the servers.

Everything lives under one folder (its ``BRAIN_VAR_DIR``): ``pg/``, ``redis/``, media and
logs. Nothing here touches ``var/pg`` or ``var/redis`` (other people's tests and ``make
run`` use them), and ``close()`` stops only what this stack started.

The web server runs the production settings (``brain.settings``: persistent connections
with health checks, the Redis cache), not the test settings, because what is under test is
how a long-lived process lives through an outage. One worker with four threads by default,
so "the same process recovered" is one PID to compare.

Used by ``tests/brain/test_outages.py`` (fast) and ``bench/faults_outages.py`` (under load).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.serve import free_port  # noqa: E402
from brain import launcher  # noqa: E402

PAGE_PATH = "topics/outages/runbook.md"


@dataclass(frozen=True)
class Seeded:
    """What the seed made, for the clients: one member and a credential for each surface."""

    username: str
    page_path: str
    personal_token: str  # bmt_…: memory and corpus:read (REST v1, /api/memory, capsules)
    mcp_token: str  # an OAuth access token bound to /api/mcp
    session_key: str  # the member signed in (the ``sessionid`` cookie)


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: status, headers (lower-case names) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class PrivateStack:
    """The servers and the web process of one private Brain under ``root``."""

    def __init__(
        self, root: Path, *, extra_env: dict[str, str] | None = None, workers: int = 1, threads: int = 4
    ) -> None:
        self.root = root.resolve()
        self.workers = workers
        self.threads = threads
        self.pg_dir = self.root / "pg"
        self.redis_dir = self.root / "redis"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_env = extra_env or {}
        self.database_url = ""
        self.redis_url = ""
        self.web: subprocess.Popen[bytes] | None = None

    # ----------------------------------------------------------------- servers

    def start_postgres(self) -> None:
        self.database_url = launcher.ensure_postgres(self.pg_dir)

    def stop_postgres(self) -> None:
        launcher.stop_postgres(self.pg_dir)

    def start_redis(self) -> None:
        url = launcher.ensure_redis(self.redis_dir)
        # A restarted Redis keeps its port (brain.launcher): the web process's URL stays right.
        assert not self.redis_url or url == self.redis_url, "the restarted Redis moved to another port"
        self.redis_url = url

    def stop_redis(self) -> None:
        launcher.stop_redis(self.redis_dir)

    def env(self) -> dict[str, str]:
        """The environment of every process of this stack (web, seed, sweeps)."""
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "brain.settings",
            "BRAIN_VAR_DIR": str(self.root),
            "BRAIN_EMBEDDED_SERVICES": "1",  # one machine: generated keys live in BRAIN_VAR_DIR
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "BRAIN_BASE_URL": self.url,
            "BRAIN_PORT": str(self.port),
            "BRAIN_DB_CONN_MAX_AGE": "60",  # the production default: connections outlive requests
            "BRAIN_REDIS_RETRY_SECONDS": "1",
            "BRAIN_LOG_LEVEL": "WARNING",
            **self.extra_env,
        }

    # ----------------------------------------------------------------- Django

    def python(self, code: str, *, timeout: float = 120) -> str:
        """Run ``code`` in a fresh interpreter with Django set up on this stack; its stdout."""
        prelude = "import django; django.setup()\n"
        done = subprocess.run(
            [sys.executable, "-c", prelude + code],
            cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"private stack: python failed:\n{done.stderr[-4000:]}")
        return done.stdout

    def prepare(self) -> Seeded:
        """Servers up, migrations applied, the member and credentials made (one process)."""
        self.start_postgres()
        self.start_redis()
        out = self.python("from bench.private_stack import _seed\nimport json\nprint(json.dumps(_seed()))")
        return Seeded(**json.loads(out.strip().splitlines()[-1]))

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``query`` on the private database (a connection of its own); [] for a command."""
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return list(cursor.fetchall()) if cursor.description is not None else []

    # ----------------------------------------------------------------- web

    def serve(self) -> None:
        """Start gunicorn (the Procfile's command; one worker by default) and wait for ``/healthz``."""
        log = open(self.root / "web.log", "ab")  # noqa: SIM115 (kept open for the process's life)
        command = [
            sys.executable, "-m", "gunicorn", "brain.wsgi", "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(self.workers), "--threads", str(self.threads), "--timeout", "60",
            "--no-control-socket",  # gunicorn's default socket is one per user: another server's
        ]  # fmt: skip
        self.web = subprocess.Popen(command, cwd=ROOT, env=self.env(), stdout=log, stderr=log)
        deadline = time.monotonic() + 90
        while self.request("GET", "/healthz", timeout=2).status != 200:
            if self.web.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.web.returncode}; see {self.root / 'web.log'}")
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not answer /healthz within 90 s")
            time.sleep(0.2)

    def web_workers(self) -> set[int]:
        """The PIDs of gunicorn's workers (children of the master)."""
        assert self.web is not None
        children = Path(f"/proc/{self.web.pid}/task/{self.web.pid}/children")
        return {int(pid) for pid in children.read_text().split()}

    def request(
        self, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None, timeout: float = 30
    ) -> Answer:
        """One request to the web process; status 0 when nothing answered."""
        data = json.dumps(body).encode() if body is not None else None
        sent = {"Content-Type": "application/json", **(headers or {})} if data is not None else dict(headers or {})
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers=sent)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (loopback)
                return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
        except urllib.error.HTTPError as error:
            return Answer(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())
        except OSError:
            return Answer(0, {}, b"")

    def close(self) -> None:
        """Stop the web process and both servers (only this stack's)."""
        if self.web is not None and self.web.poll() is None:
            self.web.terminate()
            try:
                self.web.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.web.kill()
                self.web.wait()
        self.stop_redis()
        self.stop_postgres()


@contextmanager
def private_stack(root: Path, **kwargs: Any) -> Iterator[tuple[PrivateStack, Seeded]]:
    """A prepared, serving stack under ``root``; everything stopped afterwards."""
    stack = PrivateStack(root, **kwargs)
    try:
        seeded = stack.prepare()
        stack.serve()
        yield stack, seeded
    finally:
        stack.close()


# --------------------------------------------------------------------------- seed (runs inside the stack)


def _seed() -> dict[str, str]:
    """Migrate, then make one member who reads ``topics/``, a page there, a capsule entry
    and a credential for each surface. Runs in a process set up by ``PrivateStack.python``."""
    import datetime as dt
    import secrets

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from django.utils import timezone

    call_command("migrate", verbosity=0, interactive=False, skip_checks=True)

    from oauth2_provider.models import AccessToken, Application, set_token_value

    from corpus.services import revision_create, revision_promote
    from grants.principals import SYSTEM
    from grants.services import grant_issue, member_create
    from memory.services import memory_remember
    from memory.tokens import api_token_issue

    olive = member_create(actor=SYSTEM, username="olive", email="olive@example.com")  # signed in by session below
    grant_issue(actor=SYSTEM, member=olive, path="topics/", permission="read")
    markdown = "\n".join([
        "---", "type: runbook", "owner: olive", "status: approved", "change_policy: gate", "as_of: 2026-09-02",
        "title: Outage runbook", "sensitivity: ordinary", "---", "",
        "# Outage runbook", "", "## Summary", "", "What to check when the database or Redis is down.", "",
    ])  # fmt: skip
    revision, _ = revision_create(actor=SYSTEM, path=PAGE_PATH, markdown=markdown)
    revision_promote(actor=SYSTEM, revision=revision)
    memory_remember(
        actor=olive, content="I am Olive, on call for outages.",
        tags=["capsule:core", "capsule-slot:identity", "status:canonical"],
    )  # fmt: skip
    _, personal = api_token_issue(actor=olive, name="outages", scopes=["memory", "corpus:read"])
    application = Application.objects.create(
        name="Outage agent", client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/cb",
    )  # fmt: skip
    raw = secrets.token_urlsafe(32)
    token = AccessToken(
        user=olive.user, application=application, scope="corpus:read memory",
        resource=[f"{settings.BRAIN_BASE_URL}/api/mcp"], expires=timezone.now() + dt.timedelta(hours=2),
    )  # fmt: skip
    set_token_value(token, raw)
    token.save()
    session = SessionStore()
    session[SESSION_KEY] = str(olive.user.pk)
    session[BACKEND_SESSION_KEY] = "grants.backends.MemberBackend"
    session[HASH_SESSION_KEY] = olive.user.get_session_auth_hash()
    session.create()
    assert session.session_key is not None
    return {
        "username": "olive",
        "page_path": PAGE_PATH,
        "personal_token": personal,
        "mcp_token": raw,
        "session_key": session.session_key,
    }
