"""Workers killed over and over while jobs of every kind run: nothing lost, nothing doubled.

    .venv/bin/python -m bench.faults [--seconds 120] [--jobs 40] [--workers 2]

The long variant of ``tests/faults`` (those run in seconds, one kill each). A throwaway
database gets ``--jobs`` extractions, questions and memory verdicts at once; ``--workers``
real Celery workers (on a private queue of the configured broker, which is never flushed)
work through them against fake model and embedding servers that answer after 0.1–0.6 s —
the window a kill lands in. Every 1–3 s one worker is SIGKILLed and replaced, and then every
running job's lease is made to run out — the dead worker's, and the live workers' too, so
some finish *after* the sweep handed their job to another worker (the late-finisher case).
Then the sweeps beat would run are run. After ``--seconds`` the killing stops and the
survivors drain the rest.

Prints, per kind: jobs, finished, lost (not finished), duplicated (a result applied more
than once: a second set of chunks, a verdict counted twice), the most attempts any job
took, and the kills. Targets: lost = 0, duplicated = 0.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django
from bench.search_scale import VOCABULARY

DATABASE = "brain_bench_faults"
PAGE = "topics/pricing/price-list.md"
ANSWER = {"answer": "The Team plan is 20 euros a seat a month.", "citations": [PAGE]}
CHUNKS_PER_DOCUMENT = 3


def slow(reply: Any, rng: random.Random) -> Any:
    """``reply``, after 0.1–0.6 s: long enough for a kill to land mid-call."""

    def respond(body: dict[str, Any], number: int) -> dict[str, Any]:
        time.sleep(rng.uniform(0.1, 0.6))
        answer: dict[str, Any] = reply(body, number)
        return answer

    return respond


def model_message(body: dict[str, Any], number: int) -> dict[str, Any]:
    if "memory tidy" in body["messages"][0]["content"]:
        return {"role": "assistant", "content": '{"verdict": "contradiction"}'}
    return {"role": "assistant", "content": json.dumps(ANSWER)}


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(VOCABULARY[:600], k=words)).capitalize() + "."


def document(rng: random.Random, number: int) -> bytes:
    sections = [f"## Part {part}\n\n{prose(rng, 30)} Marker {number}-{part}.\n" for part in range(CHUNKS_PER_DOCUMENT)]
    return (f"# Document {number}\n\n" + "\n".join(sections)).encode()


def spawn(queue: str) -> subprocess.Popen[bytes]:
    """A solo-pool worker on ``queue`` with this process's environment (the scratch database)."""
    from brain.launcher import PROJECT_ROOT
    from tests.faults.workers import BOOTSTRAP

    return subprocess.Popen(
        [sys.executable, "-c", BOOTSTRAP, queue, "worker", "--pool", "solo", "--queues", queue,
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
        cwd=PROJECT_ROOT, env=dict(os.environ), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def expire_running_leases() -> None:
    """Every running job's lease runs out now (a dead worker's, and a slow live one's)."""
    from django.utils import timezone

    from answers.models import Question
    from ingest.models import Extraction
    from memory.models import MemoryVerdictJob

    past = timezone.now() - dt.timedelta(seconds=1)
    Extraction.objects.filter(status="running").update(lease_expires_at=past)
    Question.objects.filter(status="running").update(lease_expires_at=past)
    MemoryVerdictJob.objects.filter(state="running").update(lease_expires_at=past)


def sweep_all() -> int:
    from answers.services import questions_sweep
    from ingest.services import extractions_sweep
    from memory.verdict_jobs import verdict_jobs_sweep

    return extractions_sweep() + questions_sweep() + verdict_jobs_sweep()


def run(seconds: float, jobs: int, worker_count: int, seed: int) -> dict[str, dict[str, int]]:
    from tests.faults.servers import HoldingServer, chat, embeddings_reply

    rng = random.Random(seed)
    media = tempfile.mkdtemp(prefix="brain-bench-faults-")
    embedder = HoldingServer(slow(embeddings_reply, random.Random(seed + 1)))
    model = HoldingServer(slow(chat(model_message), random.Random(seed + 2)))
    os.environ.update(
        BRAIN_MEDIA_ROOT=media, BRAIN_EMBEDDINGS_PROVIDER="openai", BRAIN_EMBEDDINGS_URL=embedder.url,
        BRAIN_EMBEDDINGS_MODEL="fake-embedder", LLM_BASE_URL=model.url, LLM_MODEL="fake", LLM_API_KEY="bench",
        LLM_TIMEOUT="30", BRAIN_LOG_LEVEL="WARNING",
    )  # fmt: skip
    setup_scratch_django(DATABASE)
    from tests.faults.workers import kill, private_queue

    workers: list[subprocess.Popen[bytes]] = []
    try:
        with private_queue() as queue:
            kills = _work(rng, queue, workers, seconds, jobs, worker_count)
            return _invariants(kills)
    finally:
        for worker in workers:
            kill(worker)
        embedder.close()
        model.close()
        drop_scratch(DATABASE)
        shutil.rmtree(media, ignore_errors=True)


def _work(
    rng: random.Random, queue: str, workers: list[subprocess.Popen[bytes]], seconds: float, jobs: int, count: int
) -> int:
    from answers.services import question_ask
    from grants.principals import SYSTEM
    from grants.services import grant_issue, member_create
    from ingest.services import document_ingest
    from memory.services import memory_remember
    from memory.verdict_jobs import verdict_job_queue
    from tests.base import publish
    from tests.faults.workers import kill

    alice = member_create(actor=SYSTEM, username="alice")
    for path, permission in (("captures/", "suggest"), ("topics/", "read")):
        grant_issue(actor=SYSTEM, member=alice, path=path, permission=permission)
    publish(PAGE, title="Price list", body="# Price list\n\n## Plans\n\nThe Team plan costs 20 euros a seat.\n")
    for number in range(jobs):
        document_ingest(actor=alice, filename=f"document-{number}.md", data=document(rng, number))
        question_ask(actor=alice, text=f"How much does the Team plan cost? ({number})")
        # Unrelated texts (no verdict at capture); the job is queued for the pair by hand.
        old = memory_remember(actor=alice, content=prose(rng, 12)).memory
        new = memory_remember(actor=alice, content=prose(rng, 12)).memory
        verdict_job_queue(new, old, 0.9)

    workers.extend(spawn(queue) for _ in range(count))
    kills = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not _all_finished():
        time.sleep(rng.uniform(1.0, 3.0))
        victim = rng.randrange(len(workers))
        kill(workers[victim])
        kills += 1
        expire_running_leases()
        sweep_all()
        workers[victim] = spawn(queue)
    # The killing stops: the survivors drain the rest, the sweeps catch what the last kill left.
    expire_running_leases()
    drain = time.monotonic() + 300
    while time.monotonic() < drain and not _all_finished():
        sweep_all()
        time.sleep(2)
    time.sleep(3)  # a late finisher still in flight gets its chance to (wrongly) write
    return kills


def _all_finished() -> bool:
    from answers.models import Question
    from ingest.models import Extraction
    from memory.models import MemoryVerdictJob

    return not (
        Extraction.objects.exclude(status__in=["done", "failed"]).exists()
        or Question.objects.exclude(status__in=["answered", "refused", "failed"]).exists()
        or MemoryVerdictJob.objects.exclude(state__in=["done", "failed"]).exists()
    )


def _invariants(kills: int) -> dict[str, dict[str, int]]:
    from django.db.models import Count, Max

    from answers.models import Question
    from corpus.models import SourceChunk
    from ingest.models import Extraction
    from memory.models import LinkType, Memory, MemoryLink, MemoryVerdictJob

    chunk_counts = dict(
        SourceChunk.objects.values_list("source_id").annotate(n=Count("id")).values_list("source_id", "n")
    )
    extractions = Extraction.objects.select_related("document")
    verdicts = MemoryVerdictJob.objects.all()
    old_ids = list(verdicts.values_list("old_memory_id", flat=True))
    losses = dict(Memory.objects.filter(pk__in=old_ids).values_list("pk", "contradiction_losses"))
    links = dict(
        MemoryLink.objects.filter(type=LinkType.SUPERSEDES, to_memory_id__in=old_ids)
        .values_list("to_memory_id")
        .annotate(n=Count("id"))
        .values_list("to_memory_id", "n")
    )
    return {
        "extraction": {
            "jobs": extractions.count(),
            "finished": extractions.filter(status="done").count(),
            "lost": extractions.exclude(status="done").count(),
            "duplicated": sum(chunk_counts.get(e.document.source_id, 0) > CHUNKS_PER_DOCUMENT for e in extractions),
            "max attempts": extractions.aggregate(m=Max("attempts"))["m"] or 0,
            "kills": kills,
        },
        "answer": {
            "jobs": Question.objects.count(),
            "finished": Question.objects.filter(status="answered", answer=ANSWER["answer"]).count(),
            "lost": Question.objects.exclude(status="answered").count(),
            "duplicated": 0,  # one row per question: a late run could only overwrite (fenced, see tests)
            "max attempts": Question.objects.aggregate(m=Max("attempts"))["m"] or 0,
            "kills": kills,
        },
        "memory verdict": {
            "jobs": verdicts.count(),
            "finished": verdicts.filter(state="done", outcome="contradiction").count(),
            "lost": verdicts.exclude(state="done").count(),
            "duplicated": sum(losses.get(pk, 0) > 1 or links.get(pk, 0) > 1 for pk in old_ids),
            "max attempts": verdicts.aggregate(m=Max("attempts"))["m"] or 0,
            "kills": kills,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="how long workers are killed")
    parser.add_argument("--jobs", type=int, default=40, help="jobs of each kind")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=23)
    options = parser.parse_args()
    started = time.monotonic()
    table = run(options.seconds, options.jobs, options.workers, options.seed)
    columns = ["jobs", "finished", "lost", "duplicated", "max attempts", "kills"]
    print(f"{'kind':<16}" + "".join(f"{column:>14}" for column in columns))
    for kind, row in table.items():
        print(f"{kind:<16}" + "".join(f"{row[column]:>14}" for column in columns))
    lost = sum(row["lost"] for row in table.values())
    duplicated = sum(row["duplicated"] for row in table.values())
    print(f"\nlost = {lost}, duplicated = {duplicated}  ({time.monotonic() - started:.0f} s)")
    sys.exit(0 if lost == 0 and duplicated == 0 else 1)


if __name__ == "__main__":
    main()
