"""PostgreSQL restarted and Redis stopped under load: 503 for the outage only, nothing lost or doubled.

    .venv/bin/python -m bench.faults_outages [--seconds 45] [--clients 16]

The long variant of ``tests/brain/test_outages.py`` (which does each outage once, quietly).
A private Brain (``bench/private_stack.py``: its own embedded PostgreSQL and Redis in a
temporary folder, gunicorn with two workers of four threads, the production settings) takes
``--clients`` concurrent clients for ``--seconds``: people opening a page, agents reading it
over MCP and REST, memory captures (each a distinct text) and filed questions. A fifth of
the way in PostgreSQL is stopped for three seconds (a fast shutdown: every connection is cut,
mid-transaction or not) and started again; at three fifths Redis is stopped for five seconds
and started again. Clients
act like well-behaved agents: on a 503 they wait ``Retry-After`` (at most a second here) and
send the same request again.

Afterwards the queue is emptied — as a restart of a Redis without persistence, or a worker
draining it, would leave it — and the sweep beat would run re-sends every question still
waiting: the ones whose message was never sent during the Redis outage among them. Prints
the status counts per operation and the invariants, with their targets:

- responses >= 500 other than 503: 0, and no body with a traceback;
- 503s outside the PostgreSQL outage (plus a second's grace): 0 — none at all for Redis;
- captures: lost (answered 201 but not stored) = 0, duplicated (stored twice) = 0;
- questions: lost (filed but not queued after the sweep) = 0, duplicated (queued twice) = 0;
- the web workers: the same processes before and after (none restarted).

Never touches ``var/pg`` or ``var/redis``: the servers it stops are its own.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file: replace the script's own folder (bench/secrets.py would shadow `secrets`).
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.private_stack import Answer, PrivateStack, Seeded

GRACE_SECONDS = 1.0
TARGET = "lost = 0, duplicated = 0"


@dataclass
class Record:
    """One operation as a client saw it: every attempt's (start, end, status)."""

    op: str
    attempts: list[tuple[float, float, int]] = field(default_factory=list)
    traceback: bool = False
    final: Answer | None = None


@dataclass
class Outage:
    name: str
    start: float = 0.0
    end: float = 0.0


class Load:
    """The clients: each loops over a weighted mix until told to stop, retrying 503s."""

    def __init__(self, stack: PrivateStack, seeded: Seeded, started: float) -> None:
        self.stack = stack
        self.seeded = seeded
        self.started = started
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.records: list[Record] = []
        self.captured: dict[str, Answer] = {}  # capture text -> its final answer
        self.asked: list[int] = []  # ids of filed questions
        self.serial = 0

    def now(self) -> float:
        return time.monotonic() - self.started

    def _next(self) -> int:
        with self.lock:
            self.serial += 1
            return self.serial

    def operations(self) -> list[tuple[str, int, Callable[[], Answer]]]:
        stack, seeded = self.stack, self.seeded
        bearer = {"Authorization": f"Bearer {seeded.personal_token}"}
        browser = {"Cookie": f"sessionid={seeded.session_key}", "Accept": "text/html"}
        agent = {"Authorization": f"Bearer {seeded.mcp_token}"}
        mcp_call = {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read_page", "arguments": {"path": seeded.page_path}},
        }  # fmt: skip
        return [
            ("page", 3, lambda: stack.request("GET", f"/pages/{seeded.page_path}", headers=browser)),
            ("rest", 2, lambda: stack.request("GET", "/api/v1/pages", headers=bearer)),
            ("mcp", 2, lambda: stack.request("POST", "/api/mcp", body=mcp_call, headers=agent)),
            ("capture", 3, self.capture),
            ("ask", 1, self.ask),
        ]

    def capture(self) -> Answer:
        number = self._next()
        # Distinct texts (the duplicate check would otherwise merge near-identical ones).
        text = f"Load note {number}: {random.choice(NOUNS)} {random.choice(VERBS)} {random.choice(PLACES)}."
        answer = self.attempted("capture", lambda: self.stack.request(
            "POST", "/api/memory/capture", headers={"Authorization": f"Bearer {self.seeded.personal_token}"},
            body={"content": text}))  # fmt: skip
        with self.lock:
            self.captured[text] = answer
        return answer

    def ask(self) -> Answer:
        question = f"What changed in load note {self._next()}?"
        answer = self.attempted("ask", lambda: self.stack.request(
            "POST", "/api/v1/questions", headers={"Authorization": f"Bearer {self.seeded.personal_token}"},
            body={"question": question}))  # fmt: skip
        if answer.status == 202:
            with self.lock:
                self.asked.append(int(answer.json()["question_id"]))
        return answer

    def attempted(self, op: str, send: Callable[[], Answer]) -> Answer:
        """``send`` until it is not a 503 (waiting Retry-After, at most a second); recorded."""
        record = Record(op)
        while True:
            begun = self.now()
            answer = send()
            record.attempts.append((begun, self.now(), answer.status))
            record.traceback = record.traceback or "Traceback" in answer.text
            if answer.status != 503 or len(record.attempts) > 60:
                break
            time.sleep(min(1.0, float(answer.headers.get("retry-after", "1"))))
        record.final = answer
        with self.lock:
            self.records.append(record)
        return answer

    def client(self, seed: int) -> None:
        rng = random.Random(seed)
        ops = self.operations()
        weights = [weight for _, weight, _ in ops]
        while not self.stop.is_set():
            name, _, call = rng.choices(ops, weights=weights)[0]
            if name in ("capture", "ask"):
                call()  # records itself
            else:
                self.attempted(name, call)


NOUNS = ["the release", "the audit", "the invoice run", "staging", "the VPN", "the rota", "the backlog", "the roadmap"]
VERBS = ["moved to", "now depends on", "was approved for", "is blocked by", "was cancelled for", "starts after"]
PLACES = ["Friday", "the Frankfurt region", "the second quarter", "the new vendor", "the board meeting", "May"]


def _queued_questions(stack: PrivateStack) -> list[int]:
    import redis

    queue = redis.Redis.from_url(stack.redis_url)
    found = []
    for raw in queue.lrange("celery", 0, -1):
        message = json.loads(raw)
        if message["headers"]["task"] == "answers.run":
            found.append(int(json.loads(base64.b64decode(message["body"]))[0][0]))
    return found


def run(seconds: float, clients: int) -> int:
    root = Path(tempfile.mkdtemp(prefix="brain-outages-"))
    rates = {"BRAIN_MCP_RATE_READ": "100000", "BRAIN_RATE_WRITE": "100000", "BRAIN_MCP_RATE_ASK": "100000"}
    stack = PrivateStack(root, extra_env=rates, workers=2, threads=4)
    try:
        seeded = stack.prepare()
        stack.serve()
        workers = stack.web_workers()
        started = time.monotonic()
        load = Load(stack, seeded, started)
        threads = [threading.Thread(target=load.client, args=(n,), daemon=True) for n in range(clients)]
        for thread in threads:
            thread.start()
        health: list[tuple[float, int, dict[str, Any]]] = []
        postgres, redis_outage = Outage("postgres"), Outage("redis")

        def watch() -> None:
            while not load.stop.is_set():
                answer = stack.request("GET", "/healthz", timeout=5)
                health.append((load.now(), answer.status, answer.json() if answer.status in (200, 503) else {}))
                time.sleep(0.5)

        threading.Thread(target=watch, daemon=True).start()
        time.sleep(seconds * 0.2)
        postgres.start = load.now()
        stack.stop_postgres()
        time.sleep(3)
        stack.start_postgres()
        postgres.end = load.now()
        time.sleep(max(0.0, seconds * 0.6 - load.now()))
        redis_outage.start = load.now()
        stack.stop_redis()
        time.sleep(5)
        stack.start_redis()
        redis_outage.end = load.now()
        time.sleep(max(0.0, seconds - load.now()))
        load.stop.set()
        for thread in threads:
            thread.join(timeout=90)
        # The sweep beat runs each minute re-sends what waited a minute: move the clock back instead.
        stack.sql("UPDATE answers_question SET created_at = created_at - interval '2 minutes'")
        _drop_queue(stack)  # no worker runs here: empty, as a drained (or a lost) queue is
        resent = int(stack.python("from answers.services import questions_sweep\nprint(questions_sweep())").split()[-1])
        return report(stack, load, postgres, redis_outage, health, workers, resent, seconds, clients)
    finally:
        stack.close()
        shutil.rmtree(root, ignore_errors=True)


def _drop_queue(stack: PrivateStack) -> None:
    import redis

    redis.Redis.from_url(stack.redis_url).delete("celery")


def report(
    stack: PrivateStack, load: Load, postgres: Outage, redis_outage: Outage,
    health: list[tuple[float, int, dict[str, Any]]], workers: set[int], resent: int, seconds: float, clients: int,
) -> int:  # fmt: skip
    print(f"\n{clients} clients for {seconds:.0f} s against a private Brain (2 web workers x 4 threads)")
    print(f"postgres down {postgres.start:.1f}-{postgres.end:.1f} s, ", end="")
    print(f"redis down {redis_outage.start:.1f}-{redis_outage.end:.1f} s\n")
    statuses: dict[str, Counter[int]] = {}
    for record in load.records:
        for _, _, status in record.attempts:
            statuses.setdefault(record.op, Counter())[status] += 1
    codes = sorted({status for counter in statuses.values() for status in counter})
    print(f"{'operation':<10}" + "".join(f"{code:>8}" for code in codes))
    for op in sorted(statuses):
        print(f"{op:<10}" + "".join(f"{statuses[op][code]:>8}" for code in codes))

    attempts = [attempt for record in load.records for attempt in record.attempts]
    server_errors = sum(1 for _, _, status in attempts if status >= 500 and status != 503)
    unanswered = sum(1 for _, _, status in attempts if status == 0)
    tracebacks = sum(1 for record in load.records if record.traceback)
    outside = sum(
        1 for begun, _, status in attempts
        if status == 503 and not (postgres.start - GRACE_SECONDS <= begun <= postgres.end + GRACE_SECONDS)
    )  # fmt: skip
    unfinished = sum(1 for record in load.records if record.final is not None and record.final.status == 503)

    stored = Counter(
        row[0] for row in stack.sql("SELECT content FROM memory_memory WHERE content LIKE %s", ("Load note %",))
    )
    accepted = [text for text, answer in load.captured.items() if answer.status in (200, 201)]
    lost_captures = sum(1 for text in accepted if stored[text] == 0)
    doubled_captures = sum(1 for count in stored.values() if count > 1)
    queued = Counter(_queued_questions(stack))
    lost_questions = sum(1 for question in load.asked if queued[question] == 0)
    doubled_questions = sum(1 for count in queued.values() if count > 1)
    redis_health = [
        status for moment, status, body in health if redis_outage.start + 0.5 < moment < redis_outage.end - 0.5
    ]
    named = all(body.get("redis") == "down" for moment, status, body in health
                if redis_outage.start + 0.5 < moment < redis_outage.end - 0.5)  # fmt: skip
    restarted = len(workers - stack.web_workers())

    print()
    checks = [
        (f"responses >= 500 but 503: {server_errors}; unanswered: {unanswered}", server_errors + unanswered == 0),
        (f"bodies with a traceback: {tracebacks}", tracebacks == 0),
        (f"503s outside the postgres outage (+{GRACE_SECONDS:.0f} s): {outside}", outside == 0),
        (f"requests still refused at the end: {unfinished}", unfinished == 0),
        (f"captures: {len(accepted)} accepted, {sum(stored.values())} stored; "
         f"lost = {lost_captures}, duplicated = {doubled_captures}", lost_captures == 0 and doubled_captures == 0),
        (f"questions: {len(load.asked)} filed, {resent} re-sent by the sweep; "
         f"lost = {lost_questions}, duplicated = {doubled_questions}", lost_questions == 0 and doubled_questions == 0),
        (f"/healthz during the redis outage: {sorted(set(redis_health))}, naming redis: {named}",
         bool(redis_health) and set(redis_health) == {503} and named),
        (f"web workers restarted: {restarted}", restarted == 0),
    ]  # fmt: skip
    for text, ok in checks:
        print(f"  {'ok ' if ok else 'BAD'} {text}")
    print(f"\ntargets: {TARGET}; no 5xx but the outage's 503s; the same processes throughout")
    return 0 if all(ok for _, ok in checks) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    return run(args.seconds, args.clients)


if __name__ == "__main__":
    sys.exit(main())
