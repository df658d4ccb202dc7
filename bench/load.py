"""Load on ``make run``'s own processes: a realistic mix at 50 concurrent clients, then the invariants.

    .venv/bin/python -m bench.load [--clients 50] [--seconds 60] [--think 1.0] [--json out.json] [--keep]

**The stack.** A private one: a fresh temporary ``BRAIN_VAR_DIR`` with its own embedded
PostgreSQL and Redis (the shared ``var/`` servers are never touched), then exactly what
``make run`` does before it starts (``migrate``, ``capsules_check``, ``demo_seed``,
``brain_mirror demo``, ``collectstatic``) and the Procfile's ``web`` (gunicorn: 4 workers x
2 threads, or ``BRAIN_WEB_WORKERS``/``BRAIN_WEB_THREADS``), ``worker`` and ``beat`` lines, on a
free loopback port, each in its own process group. At the end only what this run started is
stopped: SIGTERM to each leader (gunicorn's master and Celery stop their children in order),
SIGKILL to what is left of those groups after 30 s, then its PostgreSQL and Redis; the
folder is deleted (``--keep`` keeps it, with ``web.log``, ``worker.log`` and ``beat.log``).

**Credentials**, all through the product: people sign in through the real ``/login/`` form;
each person's agent gets an OAuth token through the real flow (registration, PKCE,
consent: ``bench.oauth_client``); build agents get a build credential on a build of their
own (``builds.services.build_open`` + ``build_credential_issue``, as ``manage.py
build_open`` does); memory and upload clients get a personal token
(``memory.services.api_token_issue``). For the review pages alice opens a build, her
agent writes two drafts on it over ``/api/build/mcp`` and submits it for review. The demo
lets only alice add captures, so the bench grants bob, erin and dana ``suggest`` on
``captures/load/`` in its private database: uploads are then spread over four people, as
in a team. Nothing else is added to the demo.

**The mix**: a busy team. ``--clients`` is split by these shares (each role at least one
client); each client loops "pick an operation by weight, send it, think" until the time is up:

=========================== ===== ========================================================= =========
role (personas)             share operations (weight)                                       think (s)
=========================== ===== ========================================================= =========
people, a browser session   40 %  ``GET /search?q=`` (4), ``GET /pages/<path>`` (4); the     1-5
(alice, bob, erin, dana)          approvers alice and erin also ``GET /builds/`` (1) and
                                  the build under review, ``GET /builds/<id>/`` with its
                                  diff (1)
a person's agent on         24 %  ``tools/call read_page`` (3), ``tools/call search`` (2),   0.5-2
``/api/mcp`` (OAuth token)        after one ``initialize``
a build agent on            8 %   ``tools/call write_page`` of a new page (a unique path)    2-6
``/api/build/mcp``                on its own open build, after one ``initialize``
(alice, erin, dana)
memory, ``/api/memory``     18 %  ``POST capture`` (2), ``GET recall?q=`` (3)                0.5-3
(all six demo members)
uploads, ``/api/v1/uploads`` 10 % a 1-3 kB Markdown or text file (multipart), unique bytes   1-5
(alice, bob, erin, dana)
=========================== ===== ========================================================= =========

Why those pauses: a person skimming results clicks every few seconds; an LLM agent's next
tool call waits for the model's turn (half a second for a fast model on a short result); a
build agent generates a page of Markdown before writing it; memory hooks fire once per
prompt or turn. Think times are uniform in the range times ``--think``. ``--think 0`` removes
every pause: a stress run that finds the capacity ceiling (the clients then offer far more
than 2 cores serve, so latency is queueing and the 5x target does not apply to it). Every
request opens a new connection (as behind a reverse proxy without upstream keep-alive), so
requests spread over gunicorn's workers. Sign-ins and ``initialize`` run before the measured
window, all at once (reported as the start burst).

**Order.** Warm-up (each operation a few times, not counted: every gunicorn worker loads
the embedding model on first use), then the **baseline**: each operation alone with ONE
client, sequentially (``--baseline N`` times, uploads at most 10 so one person's upload
window is not spent), then the **load**. Rate windows are per person and per minute, so
the load meets windows the baseline has partly used; that is what a busy team does too.

**It prints** per operation: requests, req/s, the answered share, p50/p95/p99 of answered
requests (429s are excluded from latency: they are fast by design and would flatter the
figure), the share of 429s, 429s whose ``Retry-After`` is missing or not an integer number
of seconds in 1..60, 5xx, other errors, and the one-client p95 beside it; the status
counts; total throughput; people's reads (search, page, queue, diff) p95 under load over
their one-client p95 (target <= 5x); and **lost writes**: every capture, upload and
``write_page`` answered 2xx is looked up in the private database afterwards (memories by
id, sources by key, build changes by build and path; target 0). Also the load average
before and during, where the machine's CPU went during the load (web, worker, beat,
PostgreSQL, Redis, this generator — it shares the cores — and everything else running on
the machine: other people's tests make the numbers noisy), and server-side tracebacks and
worker timeouts found in the logs. Exits 1 when a target is missed (a 5xx, a lost write, a
bad Retry-After, people's reads over 5x); the folder is then kept for its logs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

if not __package__:
    # Run as a file: replace (not prepend to) the script's folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.oauth_client import connect
from bench.serve import free_port
from brain import launcher

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = "2025-06-18"
MAX_CLIENTS = 200
MAX_SECONDS = 600
PEOPLE = ("alice", "bob", "erin", "dana")
APPROVERS = frozenset({"alice", "erin"})  # approve on topics/pricing/: they review the pricing build
BUILDERS = (("alice", "topics/pricing/load"), ("erin", "topics/pricing/load"), ("dana", "engineering/load"))
REMEMBERERS = ("alice", "bob", "erin", "dana", "charlie", "admin")
UPLOADERS = PEOPLE
READS = ("web.search", "web.page", "web.review_queue", "web.build_diff")  # people's reads, for the 5x target
COMMON_PAGES = ("topics/onboarding.md", "topics/pricing/price-list.md")
EXTRA_PAGES = {"alice": ("topics/pricing/discount-policy.md",), "dana": ("engineering/incident-process.md",)}
SEARCHES = (
    "discount approval", "price list", "annual billing", "enterprise plan single sign-on", "onboarding checklist",
    "kick-off within a week", "incident process", "who approves a discount", "seats prorated renewal",
    "northwind agreement",
)  # fmt: skip
SUBJECTS = ("The release train", "Northwind", "The support rota", "Our pricing review", "The onboarding call",
            "The incident review", "Quarterly planning", "The design system", "The data export", "Billing")  # fmt: skip
VERBS = ("moves to", "needs sign-off from", "is owned by", "was agreed with", "depends on", "is blocked by",
         "should be shared with", "is reviewed by")  # fmt: skip
OBJECTS = ("the commercial lead", "Thursday mornings", "the platform team", "the customer success desk",
           "the finance team", "a weekly check-in", "the security group", "the next sprint",
           "the legal team")  # fmt: skip


# --------------------------------------------------------------------------- recording


@dataclass
class Sample:
    op: str
    phase: str  # warmup | baseline | start | load
    status: str  # HTTP status, or "timeout" / "connect-error" / "protocol-error"
    ms: float
    ok: bool  # answered as the operation expects (2xx/302, no JSON-RPC or tool error)
    retry_after_bad: bool = False


@dataclass
class Ledger:
    """Writes the server acknowledged (2xx), to find in the database afterwards."""

    memories: set[str] = field(default_factory=set)
    sources: set[str] = field(default_factory=set)
    drafts: set[tuple[str, str]] = field(default_factory=set)  # (build public id, path)


@dataclass
class Recorder:
    phase: str = "warmup"
    samples: list[Sample] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)

    async def send(
        self,
        op: str,
        http: httpx2.AsyncClient,
        method: str,
        url: str,
        check: Callable[[httpx2.Response], bool],
        **kwargs: Any,
    ) -> httpx2.Response | None:
        """Send one request, time it and record what came back; None when no answer came."""
        started = time.perf_counter()
        try:
            response = await http.request(method, url, **kwargs)
        except httpx2.TimeoutException:
            self._add(op, "timeout", started, ok=False)
            return None
        except httpx2.ConnectError:
            self._add(op, "connect-error", started, ok=False)
            return None
        except httpx2.HTTPError:
            self._add(op, "protocol-error", started, ok=False)
            return None
        bad_retry = False
        if response.status_code == 429:
            value = response.headers.get("Retry-After", "")
            bad_retry = not (value.isdigit() and 1 <= int(value) <= 60)
        ok = response.status_code != 429 and check(response)
        self._add(op, str(response.status_code), started, ok=ok, retry_after_bad=bad_retry)
        return response

    def _add(self, op: str, status: str, started: float, *, ok: bool, retry_after_bad: bool = False) -> None:
        ms = (time.perf_counter() - started) * 1000
        self.samples.append(Sample(op, self.phase, status, ms, ok, retry_after_bad))


def _status_ok(*codes: int) -> Callable[[httpx2.Response], bool]:
    return lambda response: response.status_code in codes


def _rpc_ok(response: httpx2.Response) -> bool:
    """A JSON-RPC answer with a result that is not a tool error."""
    if response.status_code != 200:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return "result" in body and not body["result"].get("isError", False)


# --------------------------------------------------------------------------- the clients


class Client:
    """One simulated client: a persona, its credential and its operations."""

    role = ""
    think: tuple[float, float] = (0.0, 0.0)

    def __init__(self, base_url: str, persona: str, number: int, recorder: Recorder, rng: random.Random) -> None:
        self.base_url = base_url
        self.persona = persona
        self.number = number
        self.rec = recorder
        self.rng = rng
        self.sent = 0
        # A new connection per request (no keep-alive): the requests spread over the workers.
        self.http = httpx2.AsyncClient(
            base_url=base_url, timeout=90, limits=httpx2.Limits(max_connections=4, max_keepalive_connections=0)
        )

    def operations(self) -> list[tuple[str, int, Callable[[], Awaitable[None]]]]:
        raise NotImplementedError

    async def start(self) -> None:
        """What happens once before the loop (sign in, initialize)."""

    async def close(self) -> None:
        await self.http.aclose()

    def _unique(self) -> str:
        self.sent += 1
        return f"c{self.number}-{self.sent}"


class Person(Client):
    role = "people"
    think = (1.0, 5.0)

    def __init__(self, *args: Any, password: str, review_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.password = password
        self.review_id = review_id
        self.pages = (*COMMON_PAGES, *EXTRA_PAGES.get(self.persona, ()))

    async def start(self) -> None:
        await self.http.get("/login/")
        await self.rec.send(
            "web.sign_in", self.http, "POST", "/login/", _status_ok(302),
            data={"username": self.persona, "password": self.password,
                  "csrfmiddlewaretoken": self.http.cookies.get("csrftoken", "")},
            headers={"Referer": f"{self.base_url}/login/"},
        )  # fmt: skip

    def operations(self) -> list[tuple[str, int, Callable[[], Awaitable[None]]]]:
        ops: list[tuple[str, int, Callable[[], Awaitable[None]]]] = [
            ("web.search", 4, self.search),
            ("web.page", 4, self.page),
        ]
        if self.persona in APPROVERS:
            ops += [("web.review_queue", 1, self.queue), ("web.build_diff", 1, self.diff)]
        return ops

    async def search(self) -> None:
        query = self.rng.choice(SEARCHES)
        await self.rec.send("web.search", self.http, "GET", "/search", _status_ok(200), params={"q": query})

    async def page(self) -> None:
        await self.rec.send("web.page", self.http, "GET", f"/pages/{self.rng.choice(self.pages)}", _status_ok(200))

    async def queue(self) -> None:
        await self.rec.send("web.review_queue", self.http, "GET", "/builds/", _status_ok(200))

    async def diff(self) -> None:
        await self.rec.send("web.build_diff", self.http, "GET", f"/builds/{self.review_id}/", _status_ok(200))


class McpClient(Client):
    """Shared JSON-RPC framing for both MCP endpoints."""

    endpoint = ""
    prefix = ""

    def __init__(self, *args: Any, token: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        }

    async def rpc(self, op: str, method: str, params: dict[str, Any]) -> httpx2.Response | None:
        body = {"jsonrpc": "2.0", "id": self.sent, "method": method, "params": params}
        self.sent += 1
        return await self.rec.send(op, self.http, "POST", self.endpoint, _rpc_ok, json=body, headers=self.headers)

    async def start(self) -> None:
        await self.rpc(f"{self.prefix}.initialize", "initialize", {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "brain-load", "version": "1"},
        })  # fmt: skip

    async def call(self, op: str, tool: str, arguments: dict[str, Any]) -> httpx2.Response | None:
        return await self.rpc(op, "tools/call", {"name": tool, "arguments": arguments})


class Agent(McpClient):
    role = "agents"
    think = (0.5, 2.0)
    endpoint = "/api/mcp"
    prefix = "mcp"

    def operations(self) -> list[tuple[str, int, Callable[[], Awaitable[None]]]]:
        return [("mcp.read_page", 3, self.read_page), ("mcp.search", 2, self.search)]

    async def read_page(self) -> None:
        pages = (*COMMON_PAGES, *EXTRA_PAGES.get(self.persona, ()))
        await self.call("mcp.read_page", "read_page", {"path": self.rng.choice(pages)})

    async def search(self) -> None:
        await self.call("mcp.search", "search", {"query": self.rng.choice(SEARCHES), "k": 5})


class Builder(McpClient):
    role = "builders"
    think = (2.0, 6.0)
    endpoint = "/api/build/mcp"
    prefix = "build_mcp"

    def __init__(self, *args: Any, build_id: str, folder: str, run_tag: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.build_id = build_id
        self.folder = folder
        self.run_tag = run_tag

    def operations(self) -> list[tuple[str, int, Callable[[], Awaitable[None]]]]:
        return [("build_mcp.write_page", 1, self.write_page)]

    async def write_page(self) -> None:
        name = f"{self.run_tag}-{self._unique()}"
        path = f"{self.folder}/{name}.md"
        markdown = page_markdown(f"Load note {name}", self.persona, _sentences(self.rng, 4))
        response = await self.call("build_mcp.write_page", "write_page", {"path": path, "markdown": markdown})
        if response is not None and _rpc_ok(response):
            self.rec.ledger.drafts.add((self.build_id, path))


class Rememberer(Client):
    role = "memory"
    think = (0.5, 3.0)

    def __init__(self, *args: Any, token: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.http.headers["Authorization"] = f"Bearer {token}"

    def operations(self) -> list[tuple[str, int, Callable[[], Awaitable[None]]]]:
        return [("memory.capture", 2, self.capture), ("memory.recall", 3, self.recall)]

    async def capture(self) -> None:
        content = f"{_sentences(self.rng, 2)} (note {self._unique()})"
        response = await self.rec.send(
            "memory.capture", self.http, "POST", "/api/memory/capture", _status_ok(200, 201),
            json={"content": content, "tags": ["load-test"]},
        )  # fmt: skip
        if response is not None and response.status_code in (200, 201):
            self.rec.ledger.memories.add(str(response.json()["memory"]["id"]))

    async def recall(self) -> None:
        query = f"{self.rng.choice(SUBJECTS)} {self.rng.choice(OBJECTS)}"
        await self.rec.send("memory.recall", self.http, "GET", "/api/memory/recall", _status_ok(200),
                            params={"q": query, "topK": 5})  # fmt: skip


class Uploader(Client):
    role = "uploads"
    think = (1.0, 5.0)

    def __init__(self, *args: Any, token: str, run_tag: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.http.headers["Authorization"] = f"Bearer {token}"
        self.run_tag = run_tag

    def operations(self) -> list[tuple[str, int, Callable[[], Awaitable[None]]]]:
        return [("upload", 1, self.upload)]

    async def upload(self) -> None:
        name = f"{self.run_tag}-{self.persona}-{self._unique()}"
        markdown = self.rng.random() < 0.5
        text = "\n\n".join(_sentences(self.rng, 6) for _ in range(self.rng.randint(3, 8)))
        data = (f"# Notes {name}\n\n{text}\n" if markdown else f"Notes {name}\n\n{text}\n").encode()
        filename, kind = (f"{name}.md", "text/markdown") if markdown else (f"{name}.txt", "text/plain")
        response = await self.rec.send(
            "upload", self.http, "POST", "/api/v1/uploads", _status_ok(202),
            files={"file": (filename, data, kind)}, data={"key": f"load/{name}", "title": f"Notes {name}"},
        )  # fmt: skip
        if response is not None and response.status_code == 202:
            self.rec.ledger.sources.add(str(response.json()["key"]))


def _sentences(rng: random.Random, count: int) -> str:
    return " ".join(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}." for _ in range(count))


def page_markdown(title: str, owner: str, body: str) -> str:
    return (
        f"---\ntype: topic\nowner: {owner}\nstatus: draft\nchange_policy: gate\nas_of: 2026-10-01\n"
        f"title: {title}\n---\n\n# {title}\n\n{body}\n"
    )


# --------------------------------------------------------------------------- the private stack


@dataclass
class Stack:
    """A private var dir with its own PostgreSQL and Redis, and the Procfile processes on ``port``."""

    var: Path
    port: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> None:
        """Point this process (and so every child) at the private stack only."""
        for name in ("DATABASE_URL", "REDIS_URL", "BRAIN_MEDIA_ROOT", "BRAIN_MIRROR_CACHE", "BRAIN_S3_BUCKET",
                     launcher.EMBEDDED_MARKER):  # fmt: skip
            os.environ.pop(name, None)
        os.environ.update({
            "BRAIN_VAR_DIR": str(self.var), "BRAIN_PORT": str(self.port), "BRAIN_BASE_URL": self.base_url,
            "BRAIN_INBOUND_SMTP_PORT": str(free_port()),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        })  # fmt: skip
        launcher.configure_environment()  # starts PostgreSQL and Redis under self.var

    def prepare(self) -> None:
        """``make run``'s steps before it starts the processes (brain.launcher.run)."""
        for args in (["migrate", "--noinput"], ["capsules_check"], ["demo_seed"], ["brain_mirror", "demo"],
                     ["collectstatic", "--noinput"]):  # fmt: skip
            subprocess.run([sys.executable, str(ROOT / "manage.py"), *args, "--verbosity", "0"], check=True, cwd=ROOT,
                           stdout=subprocess.DEVNULL)  # fmt: skip

    def start(self, names: tuple[str, ...] = ("web", "worker", "beat")) -> None:
        """Start the Procfile's lines ``names``, each in its own process group, logging to var/<name>.log."""
        procfile = dict(
            line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip() and ":" in line
        )
        for name in names:
            command = procfile[name].strip().replace("var/celerybeat-schedule", str(self.var / "celerybeat-schedule"))
            log = open(self.var / f"{name}.log", "wb")  # noqa: SIM115 (kept open for the child's lifetime)
            self.processes[name] = subprocess.Popen(
                ["bash", "-c", f"exec {command}"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}; see {self.var / (name + '.log')}")
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{self.base_url}/healthz", timeout=5).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("web did not answer /healthz within 120 s")
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop the process groups this run started (and nothing else), then its servers."""
        for process in self.processes.values():
            # The leader only, as honcho does: gunicorn's master and Celery's main process then
            # stop their children in order (a SIGTERM to a pool child kills its task mid-way).
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            with contextlib.suppress(ProcessLookupError):  # anything of that group left behind
                os.killpg(process.pid, signal.SIGKILL)
        launcher.stop_redis(self.var / "redis")
        launcher.stop_postgres(self.var / "pg")


@contextlib.contextmanager
def private_stack() -> Iterator[Stack]:
    """The stack up for the block; stopped after it (the folder stays, for its logs)."""
    var = Path(tempfile.mkdtemp(prefix="brain-load-"))
    var.chmod(0o755)  # the embedded PostgreSQL runs as its own user when we are root
    stack = Stack(var=var, port=free_port())
    try:
        stack.environment()
        stack.prepare()
        stack.start()
        yield stack
    finally:
        stack.stop()


def _cpu_by_pid() -> dict[int, tuple[int, int, float]]:
    """pid -> (parent pid, process group, CPU seconds so far) for every process on the machine."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp ...
        found[int(entry)] = (int(fields[1]), int(fields[2]), (int(fields[11]) + int(fields[12])) / tick)
    return found


def _machine_busy() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / tick, sum(values[:8]) / tick


@dataclass
class CpuWindow:
    """Where the machine's CPU went between ``begin()`` and ``end()``: this stack's parts and the rest."""

    stack: Stack
    start: dict[int, tuple[int, int, float]] = field(default_factory=dict)
    busy: tuple[float, float] = (0.0, 0.0)

    def begin(self) -> None:
        self.start, self.busy = _cpu_by_pid(), _machine_busy()

    def end(self) -> dict[str, float]:
        now, (busy, total) = _cpu_by_pid(), _machine_busy()
        groups = {process.pid: name for name, process in self.stack.processes.items()}
        postmaster = _first_int(self.stack.var / "pg" / "postmaster.pid")
        redis = _first_int(self.stack.var / "redis" / "redis.pid")
        used: dict[str, float] = defaultdict(float)
        for pid, (ppid, pgid, seconds) in now.items():
            delta = seconds - self.start.get(pid, (0, 0, 0.0))[2]
            if pgid in groups:
                used[groups[pgid]] += delta
            elif pid == postmaster or ppid == postmaster:
                used["postgres"] += delta
            elif pid == redis:
                used["redis"] += delta
            elif pid == os.getpid():
                used["generator"] += delta
        machine_busy = busy - self.busy[0]
        return {
            **{name: round(value, 1) for name, value in used.items()},
            "everything else on the machine": round(max(0.0, machine_busy - sum(used.values())), 1),
            "machine busy": round(machine_busy, 1),
            "machine capacity": round(total - self.busy[1], 1),
        }


def _first_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------- credentials (in the private DB)


@dataclass
class Credentials:
    password: str
    oauth: dict[str, str]  # persona -> access token for /api/mcp
    review_build: str
    review_token: str
    builds: list[tuple[str, str, str]]  # (persona, public id, credential), one per builder client
    personal: dict[str, list[str]]  # persona -> personal tokens (one per client that needs one)


def issue_credentials(stack: Stack, builders: int, tokens_per_person: int) -> Credentials:
    """Tokens, build credentials and the uploaders' grant, through the services of the private database."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
    import django

    django.setup()
    from django.db import connections

    from bench.serve import demo_password
    from builds.services import build_credential_issue, build_open
    from grants.models import Grant, Member
    from grants.principals import SYSTEM
    from grants.services import grant_issue
    from memory.tokens import api_token_issue

    members = {m.user.username: m for m in Member.objects.select_related("user")}
    for name in UPLOADERS:
        if name != "alice" and not Grant.objects.filter(member=members[name], path="captures/load/").exists():
            grant_issue(actor=SYSTEM, member=members[name], path="captures/load/", permission="suggest")
    review = build_open(actor=members["alice"], title="Pricing page refresh", purpose="Reviewed under load")
    _, review_token = build_credential_issue(actor=members["alice"], build=review)
    builds = []
    for index in range(builders + 1):  # one more for the baseline
        persona, _ = BUILDERS[index % len(BUILDERS)]
        build = build_open(actor=members[persona], title=f"Load agent {index}")
        _, token = build_credential_issue(actor=members[persona], build=build)
        builds.append((persona, str(build.public_id), token))
    personal = {
        name: [api_token_issue(actor=members[name], name=f"load {i}")[1] for i in range(tokens_per_person)]
        for name in REMEMBERERS
    }
    connections.close_all()
    # Django's logging (root at INFO) would print every request the bench sends.
    for noisy in ("httpx2", "httpcore", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    password = demo_password()
    oauth = {name: connect(stack.base_url, name, password, client_name=f"load {name}").access_token for name in PEOPLE}
    return Credentials(password, oauth, str(review.public_id), review_token, builds, personal)


async def open_review(base_url: str, credentials: Credentials, recorder: Recorder) -> None:
    """alice's agent writes two drafts on the review build and submits it: the queue's and diff's subject."""
    agent = McpClient(base_url, "alice", 0, recorder, random.Random(0), token=credentials.review_token)
    agent.endpoint = "/api/build/mcp"
    # The demo seed's own copy of the page (found wherever the app holding the demo lives).
    price_list = next(ROOT.glob("*/demo/pages/topics/pricing/price-list.md")).read_text()
    seats = "\n\n## Seats\n\nSeats can be removed at renewal only; the Team plan starts at five seats."
    edited = price_list.replace("prorated to the renewal date.", "prorated to the renewal date." + seats)
    for op, args in (
        ("setup", {"path": "topics/pricing/price-list.md", "markdown": edited}),
        ("setup", {"path": "topics/pricing/volume-tiers.md", "markdown": page_markdown(
            "Volume tiers", "alice", "Above 50 seats the per-seat price drops by a tenth; above 200 by a fifth.")}),
    ):  # fmt: skip
        response = await agent.call(op, "write_page", args)
        if response is None or not _rpc_ok(response):
            raise RuntimeError(f"setting up the review build failed: {response and response.text[:300]}")
    submitted = await agent.call("setup", "submit_for_review", {})
    if submitted is None or not _rpc_ok(submitted):
        raise RuntimeError(f"submitting the review build failed: {submitted and submitted.text[:300]}")
    await agent.close()


# --------------------------------------------------------------------------- the run


ROLES: tuple[tuple[str, float], ...] = (
    ("people", 0.40), ("agents", 0.24), ("builders", 0.08), ("memory", 0.18), ("uploads", 0.10),
)  # fmt: skip


def split(clients: int) -> dict[str, int]:
    """Clients per role by the shares (largest remainder), each role at least one when there are enough."""
    counts = {role: int(clients * share) for role, share in ROLES}
    if clients >= len(ROLES):
        for role in counts:
            counts[role] = max(1, counts[role])
    order = sorted(ROLES, key=lambda item: clients * item[1] - int(clients * item[1]), reverse=True)
    index = 0
    while sum(counts.values()) < clients:
        counts[order[index % len(order)][0]] += 1
        index += 1
    while sum(counts.values()) > clients:
        largest = max(counts, key=lambda role: counts[role])
        counts[largest] -= 1
    return counts


def make_clients(
    counts: dict[str, int], credentials: Credentials, base_url: str, recorder: Recorder, run_tag: str, seed: int
) -> list[Client]:
    made: list[Client] = []
    number = 0
    used_tokens: Counter[str] = Counter()

    def rng() -> random.Random:
        return random.Random(seed * 1000 + number)

    def personal(persona: str) -> str:
        used_tokens[persona] += 1
        return credentials.personal[persona][used_tokens[persona] - 1]

    for i in range(counts["people"]):
        number += 1
        made.append(Person(base_url, PEOPLE[i % len(PEOPLE)], number, recorder, rng(), password=credentials.password,
                           review_id=credentials.review_build))  # fmt: skip
    for i in range(counts["agents"]):
        number += 1
        persona = PEOPLE[i % len(PEOPLE)]
        made.append(Agent(base_url, persona, number, recorder, rng(), token=credentials.oauth[persona]))
    for i in range(counts["builders"]):
        number += 1
        persona, build_id, token = credentials.builds[i]
        folder = dict(BUILDERS)[persona]
        made.append(Builder(base_url, persona, number, recorder, rng(), token=token, build_id=build_id,
                            folder=folder, run_tag=run_tag))  # fmt: skip
    for i in range(counts["memory"]):
        number += 1
        persona = REMEMBERERS[i % len(REMEMBERERS)]
        made.append(Rememberer(base_url, persona, number, recorder, rng(), token=personal(persona)))
    for i in range(counts["uploads"]):
        number += 1
        persona = UPLOADERS[i % len(UPLOADERS)]
        made.append(Uploader(base_url, persona, number, recorder, rng(), token=personal(persona), run_tag=run_tag))
    return made


async def warm_and_baseline(
    base_url: str, credentials: Credentials, recorder: Recorder, run_tag: str, repeats: int
) -> None:
    """Warm every worker (not counted), then each operation alone with ONE client, one request at a time."""
    one = {"people": 2, "agents": 1, "builders": 1, "memory": 1, "uploads": 1}
    # The baseline uses the spare build (the last one) and alice (the approver) for people.
    spare = Credentials(credentials.password, credentials.oauth, credentials.review_build, credentials.review_token,
                        [credentials.builds[-1]], credentials.personal)  # fmt: skip
    clients = make_clients(one, spare, base_url, recorder, f"{run_tag}b", seed=99)
    try:
        await asyncio.gather(*(client.start() for client in clients))
        recorder.phase = "warmup"
        for _ in range(2):  # 8 requests of each kind at once: every worker loads the model
            await asyncio.gather(*(op() for client in clients for _n, _w, op in client.operations() for _ in range(4)
                                   if _n not in ("upload",)))  # fmt: skip
        recorder.phase = "baseline"
        seen: set[str] = set()
        for client in clients:
            await client.start()
            for name, _weight, op in client.operations():
                if name in seen:
                    continue
                seen.add(name)
                for _ in range(min(repeats, 10) if name == "upload" else repeats):
                    await op()
    finally:
        await asyncio.gather(*(client.close() for client in clients))


async def load(
    clients: list[Client], recorder: Recorder, seconds: float, think_scale: float, window: CpuWindow
) -> tuple[float, dict[str, float]]:
    """Every client starts (sign in, initialize) at once; then the measured window.

    Returns the window's length and where the machine's CPU went during it.
    """
    recorder.phase = "start"
    await asyncio.gather(*(client.start() for client in clients))
    recorder.phase = "load"
    window.begin()
    began = time.perf_counter()
    deadline = began + seconds

    async def loop(client: Client) -> None:
        ops = client.operations()
        weights = [weight for _name, weight, _op in ops]
        while time.perf_counter() < deadline:
            _name, _weight, op = client.rng.choices(ops, weights)[0]
            await op()
            pause = client.rng.uniform(*client.think) * think_scale
            await asyncio.sleep(max(0.0, min(pause, deadline - time.perf_counter())))

    await asyncio.gather(*(loop(client) for client in clients))
    elapsed = time.perf_counter() - began
    cpu = window.end()
    await asyncio.gather(*(client.close() for client in clients))
    return elapsed, cpu


async def sample_load_average(stop: asyncio.Event, into: list[float]) -> None:
    while not stop.is_set():
        into.append(os.getloadavg()[0])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 5)


# --------------------------------------------------------------------------- after the run


def lost_writes(ledger: Ledger) -> dict[str, tuple[int, int]]:
    """(acknowledged, missing) per kind: each 2xx write looked up in the private database."""
    from django.db import connections

    from builds.models import BuildChange
    from corpus.models import Source
    from memory.models import Memory

    found_memories = set(map(str, Memory.objects.filter(id__in=list(ledger.memories)).values_list("id", flat=True)))
    found_sources = set(Source.objects.filter(key__in=list(ledger.sources)).values_list("key", flat=True))
    by_build: dict[str, set[str]] = {}
    for build_id, path in ledger.drafts:
        by_build.setdefault(build_id, set()).add(path)
    found_drafts = {
        (build_id, path)
        for build_id, paths in by_build.items()
        for path in BuildChange.objects.filter(
            build__public_id=build_id, path__in=list(paths), revision__isnull=False
        ).values_list("path", flat=True)
    }
    connections.close_all()
    return {
        "memory.capture": (len(ledger.memories), len(ledger.memories - found_memories)),
        "upload": (len(ledger.sources), len(ledger.sources - found_sources)),
        "build_mcp.write_page": (len(ledger.drafts), len(ledger.drafts - found_drafts)),
    }


def extractions(keys: set[str]) -> dict[str, int]:
    from django.db import connections

    from ingest.models import Extraction

    rows = Counter(
        Extraction.objects.filter(document__source__key__in=list(keys)).values_list("status", flat=True)
    )  # fmt: skip
    connections.close_all()
    return dict(rows)


def server_problems(var: Path) -> dict[str, Any]:
    """Tracebacks, worker timeouts, error lines and warnings (counted by message) in the processes' logs.

    Warnings matter too: "could not queue …" means a job waits for its sweep instead of running.
    """
    found: dict[str, Any] = {}
    for name in ("web", "worker", "beat"):
        path = var / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        errors = [
            line for line in text.splitlines() if re.search(r'"level": "(ERROR|CRITICAL)"|\[(ERROR|CRITICAL)\]', line)
        ]
        warnings = Counter(
            re.sub(r"\d+", "N", match.group(1))[:120]
            for match in re.finditer(r'"level": "WARNING", "logger": "[^"]*", "message": "([^"]*)"', text)
        )
        found[name] = {
            "tracebacks": text.count("Traceback (most recent call last)"),
            "worker_timeouts": text.count("WORKER TIMEOUT"),
            "error_lines": len(errors),
            "first_errors": [line[:400] for line in errors[:5]],
            "warnings": dict(warnings.most_common(5)),
        }
    return found


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def summarise(samples: list[Sample], phase: str, seconds: float) -> dict[str, dict[str, Any]]:
    by_op: dict[str, list[Sample]] = {}
    for sample in samples:
        if sample.phase == phase:
            by_op.setdefault(sample.op, []).append(sample)
    table: dict[str, dict[str, Any]] = {}
    for op, rows in sorted(by_op.items()):
        answered = [row.ms for row in rows if row.status != "429"]
        statuses = Counter(row.status for row in rows)
        table[op] = {
            "n": len(rows), "rate": len(rows) / seconds if seconds else float("nan"),
            "ok": sum(row.ok for row in rows), "p50": percentile(answered, 0.50), "p95": percentile(answered, 0.95),
            "p99": percentile(answered, 0.99), "share_429": statuses["429"] / len(rows),
            "retry_after_bad": sum(row.retry_after_bad for row in rows),
            "5xx": sum(n for status, n in statuses.items() if status.startswith("5")),
            "other_errors": sum(not row.ok and row.status != "429" and not row.status.startswith("5") for row in rows),
            "statuses": dict(sorted(statuses.items())),
        }  # fmt: skip
    return table


def reads_p95(samples: list[Sample], phase: str) -> float:
    return percentile([s.ms for s in samples if s.phase == phase and s.op in READS and s.status != "429"], 0.95)


def render(result: dict[str, Any]) -> str:
    load, base = result["load"], result["baseline"]
    lines = [
        "",
        f"{result['clients']} clients for {result['seconds']:.0f} s ({result['mix']}); think x{result['think']}; "
        f"{result['cores']} cores; load average {result['loadavg_before']:.2f} before, "
        f"{result['loadavg_during']:.2f} during (mean)",
        "CPU seconds during the load: " + ", ".join(f"{name} {value}" for name, value in result["cpu_seconds"].items()),
        "",
        f"{'operation':22} {'n':>6} {'req/s':>7} {'ok':>6} {'p50':>7} {'p95':>7} {'p99':>7} {'429':>6} "
        f"{'RA bad':>6} {'5xx':>4} {'other':>5} {'1-client p95':>12} {'x':>5}",
    ]
    for op, row in load.items():
        one = base.get(op, {}).get("p95", float("nan"))
        ratio = row["p95"] / one if one == one and one else float("nan")
        lines.append(
            f"{op:22} {row['n']:6d} {row['rate']:7.1f} {row['ok']:6d} {row['p50']:7.0f} {row['p95']:7.0f} "
            f"{row['p99']:7.0f} {row['share_429']:6.1%} {row['retry_after_bad']:6d} {row['5xx']:4d} "
            f"{row['other_errors']:5d} {one:12.0f} {ratio:5.1f}"
        )
    lines.append("(ms; latency percentiles over answered requests — 429s excluded; ok = answered as expected)")
    lines.append("")
    for op, row in load.items():
        lines.append(f"  {op:22} statuses {', '.join(f'{s}×{n}' for s, n in row['statuses'].items())}")
    starts = result["start"]
    if starts:
        lines.append("  start burst: " + "; ".join(
            f"{op} n={row['n']} p50 {row['p50']:.0f} p95 {row['p95']:.0f} ms, statuses {row['statuses']}"
            for op, row in starts.items()))  # fmt: skip
    total = sum(row["n"] for row in load.values())
    lines += [
        "",
        f"throughput: {total / result['seconds']:.1f} req/s total ({total} requests), "
        f"{sum(row['ok'] for row in load.values()) / result['seconds']:.1f} req/s answered as expected",
        f"responses >= 500 under load: {sum(row['5xx'] for row in load.values())} (target 0); "
        f"in the baseline and start: {sum(r['5xx'] for r in base.values()) + sum(r['5xx'] for r in starts.values())}",
        f"429s: {sum(round(r['share_429'] * r['n']) for r in load.values())}, with Retry-After missing or "
        f"invalid: {sum(r['retry_after_bad'] for r in load.values())} (target 0)",
        f"people's reads p95: {result['reads_p95_load']:.0f} ms under load vs {result['reads_p95_one']:.0f} ms with "
        f"one client = {result['reads_ratio']:.1f}x (target <= 5x)",
        "lost writes (acknowledged 2xx, then not in the database): " + ", ".join(
            f"{op} {missing}/{acked}" for op, (acked, missing) in result["lost"].items()) + " (target 0)",
        f"extractions of the uploads when the load ended: {result['extractions']}",
    ]  # fmt: skip
    for name, found in result["server"].items():
        if found["tracebacks"] or found["worker_timeouts"] or found["error_lines"]:
            lines.append(f"{name} log: {found['tracebacks']} tracebacks, {found['worker_timeouts']} worker timeouts, "
                         f"{found['error_lines']} error lines; first: {found['first_errors'][:2]}")  # fmt: skip
        if found["warnings"]:
            lines.append(f"{name} log warnings: {found['warnings']}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50, help=f"concurrent clients (1..{MAX_CLIENTS})")
    parser.add_argument("--seconds", type=float, default=60.0, help=f"length of the load (1..{MAX_SECONDS})")
    parser.add_argument("--think", type=float, default=1.0, help="scale of the think times (0: none)")
    parser.add_argument("--baseline", type=int, default=20, help="one-client requests per operation (5..200)")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the private var dir and its logs (kept anyway when a target is missed or a log holds a traceback)",
    )
    args = parser.parse_args()
    if not (1 <= args.clients <= MAX_CLIENTS and 1 <= args.seconds <= MAX_SECONDS and 5 <= args.baseline <= 200):
        parser.error(f"--clients 1..{MAX_CLIENTS}, --seconds 1..{MAX_SECONDS}, --baseline 5..200")
    if not 0 <= args.think <= 10:
        parser.error("--think 0..10")

    counts = split(args.clients)
    run_tag = f"r{int(time.time()) % 100000}"
    recorder = Recorder()
    before = os.getloadavg()[0]
    print(f"private stack: starting (migrate, demo data, web + worker + beat); mix {counts}", flush=True)
    with private_stack() as stack:
        print(f"serving {stack.base_url} from {stack.var}", flush=True)
        credentials = issue_credentials(
            stack, counts["builders"], tokens_per_person=1 + counts["memory"] + counts["uploads"]
        )
        asyncio.run(open_review(stack.base_url, credentials, recorder))
        print(f"baseline: each operation alone, {args.baseline} times, one client", flush=True)
        asyncio.run(warm_and_baseline(stack.base_url, credentials, recorder, run_tag, args.baseline))
        clients = make_clients(counts, credentials, stack.base_url, recorder, run_tag, args.seed)
        print(f"load: {args.clients} clients for {args.seconds:.0f} s", flush=True)
        averages: list[float] = []

        async def measured() -> tuple[float, dict[str, float]]:
            stop = asyncio.Event()
            sampler = asyncio.create_task(sample_load_average(stop, averages))
            try:
                return await load(clients, recorder, args.seconds, args.think, CpuWindow(stack))
            finally:
                stop.set()
                await sampler

        elapsed, cpu = asyncio.run(measured())
        lost = lost_writes(recorder.ledger)
        finished = extractions(recorder.ledger.sources)
    # After the stop: a traceback written while the processes shut down counts too.
    problems = server_problems(stack.var)
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"), "clients": args.clients, "seconds": elapsed,
        "mix": ", ".join(f"{n} {role}" for role, n in counts.items()), "think": args.think,
        "cores": os.cpu_count(), "loadavg_before": before,
        "loadavg_during": statistics.fmean(averages) if averages else float("nan"),
        "cpu_seconds": cpu,
        "load": summarise(recorder.samples, "load", elapsed),
        "baseline": summarise(recorder.samples, "baseline", 0),
        "start": summarise(recorder.samples, "start", 0),
        "reads_p95_load": reads_p95(recorder.samples, "load"),
        "reads_p95_one": reads_p95(recorder.samples, "baseline"),
        "lost": lost, "extractions": finished, "server": problems,
    }  # fmt: skip
    result["reads_ratio"] = result["reads_p95_load"] / result["reads_p95_one"]
    print(render(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    load_rows = result["load"].values()
    failed = (
        sum(row["5xx"] for row in load_rows) > 0
        or sum(row["retry_after_bad"] for row in load_rows) > 0
        or any(missing for _acked, missing in result["lost"].values())
        or not result["reads_ratio"] <= 5
    )
    noisy_logs = any(found["tracebacks"] or found["worker_timeouts"] for found in problems.values())
    if args.keep or failed or noisy_logs:
        print(f"kept {stack.var} (web.log, worker.log, beat.log)")
    else:
        shutil.rmtree(stack.var, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
