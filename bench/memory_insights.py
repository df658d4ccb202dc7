"""Weekly insights' runtime per layer at 5k and 50k memories, and the model-free contradiction check.

    .venv/bin/python -m bench.memory_insights [--sizes 5000,50000] [--repeats 3]

For each size it builds a throwaway database: 50 members, memories spread 30 % shared /
70 % personal, dated evenly over a year (so about 1/52 of them fall in the summarised
week), 15 % volatile, 8 % flagged near-duplicates, a few recalled in the week, supersession
links among 2 %, and a few capsule entries per layer (some in conflict). It then times
one personal insight (summary + text) for each of 10 members and the shared layer's, and
prints the medians and the 50k / 5k ratio (target ≤ 3: the job reads the week's rows
through indexes, never the whole table).

The contradiction check (``memory.contradictions``) is scored on the labelled pairs of
``memory.evaluation.contradictions``: precision on what it flags (target ≥ 0.9) and recall.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if not __package__:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django
from bench.search_scale import VOCABULARY, ZIPF_WEIGHTS

MEMBERS = 50
TIMED_MEMBERS = 10
YEAR = 365 * 86400.0


def contradiction_scores() -> None:
    from memory.evaluation.contradictions import evaluate

    scores = evaluate()
    print(
        f"contradiction check (no model) on {scores['pairs']:.0f} labelled pairs"
        f" ({scores['positives']:.0f} contradictions):"
        f" flagged {scores['flagged']:.0f}, precision {scores['precision']:.3f} (target >= 0.9),"
        f" recall {scores['recall']:.3f}",
        flush=True,
    )


def build(size: int, rng: random.Random, now: dt.datetime) -> list[Any]:
    """Load ``size`` memories by COPY, plus links; returns the members."""
    from django.db import connection

    from grants.principals import SYSTEM
    from grants.services import member_create

    members = [member_create(actor=SYSTEM, username=f"m{i}") for i in range(MEMBERS)]
    columns = (
        "id, author_id, workspace, content, tags, source, origin, status, importance, kind, volatility,"
        " recall_count, last_recalled_at, contradiction_wins, contradiction_losses, embedding_model, lexical,"
        " cjk_terms, created_at, updated_at"
    )
    ids: list[tuple[str, str, int]] = []
    raw = connection.connection
    with raw.cursor() as cursor, cursor.copy(f"COPY memory_memory ({columns}) FROM STDIN") as copy:
        for index in range(size):
            memory_id = str(uuid.uuid4())
            author = rng.choice(members).pk
            workspace = "company" if rng.random() < 0.3 else "personal"
            created = now - dt.timedelta(seconds=rng.uniform(0, YEAR))
            updated = created + dt.timedelta(seconds=rng.uniform(0, min(YEAR / 4, (now - created).total_seconds())))
            text = " ".join(rng.choices(VOCABULARY, weights=ZIPF_WEIGHTS, k=18))
            tags = ["duplicate-candidate"] if rng.random() < 0.08 else []
            status = "canonical" if rng.random() < 0.1 else "draft"
            if index % 997 == 0:  # a few capsule entries, two per slot now and then
                tags = ["capsule:core", f"capsule-slot:{rng.choice(['identity', 'preferences'])}"]
                status = "canonical"
            recalled = now - dt.timedelta(days=rng.uniform(0, 30)) if rng.random() < 0.05 else None
            volatility = rng.choices(["durable", "state", "volatile"], weights=[60, 25, 15])[0]
            copy.write_row((
                memory_id, author, workspace, text, "{" + ",".join(tags) + "}", "bench", "", status,
                rng.randint(1, 5), rng.choice(["episodic", "semantic"]), volatility,
                rng.randint(1, 20) if recalled else 0, recalled, 0, 0, "", text, "", created, updated,
            ))  # fmt: skip
            ids.append((memory_id, workspace, author))
    raw.commit() if not raw.autocommit else None
    with connection.cursor() as cursor:
        pairs = []
        for _ in range(size // 50):
            (a, layer, author), (b, other_layer, other_author) = rng.sample(ids, 2)
            if layer == other_layer and (layer == "company" or author == other_author):
                pairs.append((a, b))
        for start in range(0, len(pairs), 1000):
            chunk = pairs[start : start + 1000]
            cursor.executemany(
                "INSERT INTO memory_memorylink (from_memory_id, to_memory_id, type, provenance, created_at)"
                " VALUES (%s, %s, 'supersedes', 'system', now() - random() * interval '60 days')"
                " ON CONFLICT DO NOTHING",
                chunk,
            )
        cursor.execute("ANALYZE")
    return members


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    name = "brain_bench_insights"
    setup_scratch_django(name)
    from django.core.management import call_command
    from django.utils import timezone

    from memory.insights import last_full_week, render, summarise

    try:
        contradiction_scores()
        now = timezone.now()
        week = last_full_week(now)
        medians: dict[int, tuple[float, float]] = {}
        for size in (int(s) for s in args.sizes.split(",")):
            call_command("flush", interactive=False, verbosity=0)
            started = time.perf_counter()
            members = build(size, random.Random(size), now)
            print(f"\n{size} memories ({MEMBERS} members) built in {time.perf_counter() - started:.0f}s", flush=True)
            personal: list[float] = []
            shared: list[float] = []
            new_counts: list[int] = []
            for _repeat in range(args.repeats):
                for member in members[:TIMED_MEMBERS]:
                    started = time.perf_counter()
                    summary = summarise(member, week)
                    render(summary, week)
                    personal.append((time.perf_counter() - started) * 1000)
                    new_counts.append(summary["new"]["count"])
                started = time.perf_counter()
                render(summarise(None, week), week)
                shared.append((time.perf_counter() - started) * 1000)
            medians[size] = (statistics.median(personal), statistics.median(shared))
            print(
                f"  personal insight p50 {medians[size][0]:.1f} ms (max {max(personal):.1f}; median new memories in"
                f" the week {statistics.median(new_counts):.0f}); shared layer p50 {medians[size][1]:.1f} ms",
                flush=True,
            )
        if len(medians) >= 2:
            small, large = min(medians), max(medians)
            print(
                f"\nratio {large} / {small}: personal {medians[large][0] / medians[small][0]:.2f}x, shared"
                f" {medians[large][1] / medians[small][1]:.2f}x (target <= 3x)"
            )
    finally:
        drop_scratch(name)


if __name__ == "__main__":
    main()
