"""Throughput of the local embedding model: batches sorted by length vs. unsorted.

    .venv/bin/python bench/embeddings.py [--chunks 1000] [--batch-size 32] [--threads 2] [--seed 7]

Generates chunks of varied length (20–1,200 characters of English-like prose), embeds them
once with length-sorted batches and once in arrival order, and prints chunks/s of each and
the ratio, measured in the same run. A warm-up call loads the model first.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from brain.embeddings import LocalEmbedder

WORDS = (
    "policy pricing discount contract renewal customer account invoice onboarding review "
    "approval owner source capture meeting decision roadmap release incident postmortem "
    "security access grant page revision search memory team quarter revenue target churn "
    "support ticket escalation engineer product launch budget forecast hiring interview "
    "the a of to and in for on with by from at as is are was were be will can should must"
).split()


def generate_chunks(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    chunks = []
    for _ in range(count):
        target = int(rng.lognormvariate(5.5, 0.8))  # median ≈ 245 chars, long tail
        target = max(20, min(1200, target))
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(WORDS))
        chunks.append(" ".join(words).capitalize() + ".")
    return chunks


def measure(embedder: LocalEmbedder, chunks: list[str], repeats: int) -> list[float]:
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        embedder.embed(chunks)
        rates.append(len(chunks) / (time.perf_counter() - started))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help="runs per mode; the median is reported")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    chunks = generate_chunks(args.chunks, args.seed)
    lengths = sorted(len(c) for c in chunks)
    print(f"{len(chunks)} chunks, chars: median {lengths[len(lengths) // 2]}, max {lengths[-1]}")
    sorted_embedder = LocalEmbedder(batch_size=args.batch_size, threads=args.threads, sort_by_length=True)
    unsorted_embedder = LocalEmbedder(batch_size=args.batch_size, threads=args.threads, sort_by_length=False)
    sorted_embedder.embed(chunks[:8])
    unsorted_embedder.embed(chunks[:8])

    sorted_rates = measure(sorted_embedder, chunks, args.repeats)
    unsorted_rates = measure(unsorted_embedder, chunks, args.repeats)
    sorted_median = statistics.median(sorted_rates)
    unsorted_median = statistics.median(unsorted_rates)
    for label, median, rates in (
        ("sorted by length", sorted_median, sorted_rates),
        ("arrival order", unsorted_median, unsorted_rates),
    ):
        runs = ", ".join(f"{rate:.1f}" for rate in rates)
        print(f"{label + ':':<20}{median:8.1f} chunks/s  (runs: {runs})")
    print(f"ratio sorted/unsorted: {sorted_median / unsorted_median:.2f}x")


if __name__ == "__main__":
    main()
