"""Cached prompt-capsule reads at 1k and 100k memories, in one run, and their ratio.

    .venv/bin/python -m bench.capsules [--sizes 1000,100000] [--reads 300]

Each size gets a throwaway database with that many ordinary memories (loaded by COPY)
plus the reader's four core capsule entries and three for a project. After one warming
read, ``get_capsule`` is timed for repeated reads: each is one indexed query for the
layer's revision plus a Redis get, whatever the size of the brain. Target ratio <= 1.2.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django
from bench.search_scale import percentile


def build(size: int) -> Any:
    from django.db import connection

    from grants.principals import SYSTEM
    from grants.services import member_create
    from memory.services import memory_remember

    reader = member_create(actor=SYSTEM, username=f"reader{size}")
    for slot in ("identity", "preferences", "constraints", "principles"):
        memory_remember(actor=reader, content=f"The {slot} of the reader, written out in a sentence or two.",
                        tags=["capsule:core", f"capsule-slot:{slot}", "status:canonical"])  # fmt: skip
    for slot in ("current-state", "decisions", "open-questions"):
        memory_remember(actor=reader, content=f"Project atlas {slot}: a few lines.",
                        tags=["capsule:project:atlas", f"capsule-slot:{slot}", "status:canonical"])  # fmt: skip
    columns = (
        "id, author_id, workspace, content, tags, source, status, importance, kind, volatility, recall_count,"
        " contradiction_wins, contradiction_losses, embedding_model, lexical, cjk_terms, is_capsule, created_at,"
        " updated_at"
    )
    raw = connection.connection
    with raw.cursor() as cursor, cursor.copy(f"COPY memory_memory ({columns}) FROM STDIN") as copy:
        for index in range(size):
            text = f"Ordinary memory number {index} about nothing in particular."
            workspace = "company" if index % 3 == 0 else "personal"
            stamp = "2026-11-30T00:00:00Z"
            row = (str(uuid.uuid4()), reader.pk, workspace, text, "{note}", "", "draft", 3, "semantic", "durable",
                   0, 0, 0, "", text, "", False, stamp, stamp)  # fmt: skip
            copy.write_row(row)
    raw.commit() if not raw.autocommit else None
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return reader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args()
    name = "brain_bench_capsules"
    setup_scratch_django(name)
    from django.core.management import call_command

    from memory.capsules import get_capsule

    medians: dict[int, float] = {}
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            call_command("flush", interactive=False, verbosity=0)
            reader = build(size)
            for kind, project in (("core", None), ("project", "atlas")):
                get_capsule(member=reader, kind=kind, project_id=project)  # warm the cache
            timings = []
            for read in range(args.reads):
                kind, project = ("core", None) if read % 2 == 0 else ("project", "atlas")
                started = time.perf_counter()
                capsule = get_capsule(member=reader, kind=kind, project_id=project)
                timings.append((time.perf_counter() - started) * 1000)
                assert capsule.payload["populated"]
            medians[size] = statistics.median(timings)
            print(f"{size:>7} memories: cached read p50 {medians[size]:.3f} ms, p95 {percentile(timings, 0.95):.3f} ms "
                  f"({args.reads} reads)", flush=True)  # fmt: skip
        sizes = sorted(medians)
        if len(sizes) >= 2:
            ratio = medians[sizes[-1]] / medians[sizes[0]]
            print(f"ratio p50 {sizes[-1]} / {sizes[0]}: {ratio:.2f}   (target <= 1.2)")
    finally:
        drop_scratch(name)


if __name__ == "__main__":
    main()
