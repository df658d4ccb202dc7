"""Import throughput: N generated pages through the governed write path, then a re-import.

    .venv/bin/python bench/corpus_import.py [--pages 1000] [--seed 3] [--keep]

Runs against a scratch database (``brain_bench``) on the configured server (the embedded
one by default), migrates it, imports the pages as one change (validation, scanner,
chunking, embedding, promotion), then imports the identical tree again. Prints pages/s,
chunks/s, the share of wall time spent in the embedder, and the ratio of re-import time
from collections.abc import Callable
from typing import Any
to first-import time (content-addressed chunks: the re-import embeds nothing).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django

WORDS = (
    "customer contract renewal pricing discount approval escalation account manager quarterly review "
    "onboarding checklist incident response postmortem runbook deployment release rollback database "
    "backup restore retention policy security access audit compliance invoice billing forecast budget "
    "hiring interview team process decision roadmap milestone dependency risk owner stakeholder"
).split()


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    return " ".join(words).capitalize() + "."


def page(rng: random.Random, index: int) -> tuple[str, str]:
    area = rng.choice(["topics", "engineering", "sales", "people"])
    path = f"{area}/section-{index % 40}/page-{index}.md"
    sections = []
    for number in range(rng.randint(2, 5)):
        paragraphs = ["\n".join(sentence(rng) for _ in range(rng.randint(2, 6))) for _ in range(rng.randint(1, 3))]
        sections.append(f"## Section {number} {rng.choice(WORDS)}\n\n" + "\n\n".join(paragraphs))
    markdown = (
        "---\ntype: topic\nowner: bench\nstatus: approved\nchange_policy: gate\nas_of: 2026-11-30\n---\n\n"
        f"# Page {index}\n\n" + "\n\n".join(sections) + "\n"
    )
    return path, markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the brain_bench database afterwards")
    args = parser.parse_args()

    setup_scratch_django("brain_bench")

    from brain import embeddings
    from builds.services import build_import
    from corpus.models import Chunk
    from grants.principals import SYSTEM
    from grants.services import member_create

    member_create(actor=SYSTEM, username="bench")
    rng = random.Random(args.seed)
    files = [page(rng, index) for index in range(args.pages)]

    spent = {"seconds": 0.0, "calls": 0}
    real_embed = embeddings.embed

    def timed_embed(texts):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return real_embed(texts)
        finally:
            spent["seconds"] += time.perf_counter() - started
            spent["calls"] += 1

    embeddings.embed = timed_embed  # type: ignore[assignment]
    real_embed(["warm up the model"])

    # The secret detector (every field of every page, three readings each) and the check of
    # the rendered page, timed where the write path calls them.
    from brain.text import secrets as detector
    from corpus import services as corpus_services

    scanning = {"find": 0.0, "render": 0.0}

    def timed(function: Callable[..., Any], bucket: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                scanning[bucket] += time.perf_counter() - started

        return wrapper

    detector.find = timed(detector.find, "find")  # type: ignore[assignment]
    corpus_services.rendered_text = timed(corpus_services.rendered_text, "render")  # type: ignore[assignment]

    started = time.perf_counter()
    first = build_import(requester=SYSTEM, approver=SYSTEM, files=files)
    first_seconds = time.perf_counter() - started
    first_embed_seconds, first_calls = spent["seconds"], spent["calls"]
    first_scanning = dict(scanning)
    scanning.update(find=0.0, render=0.0)

    spent.update(seconds=0.0, calls=0)
    started = time.perf_counter()
    second = build_import(requester=SYSTEM, approver=SYSTEM, files=files)
    second_seconds = time.perf_counter() - started

    print(f"pages: {args.pages}, chunks: {first.chunks.total} ({Chunk.objects.count()} distinct)")
    print(
        f"first import:   {first_seconds:8.1f} s   {args.pages / first_seconds:7.1f} pages/s   "
        f"{first.chunks.total / first_seconds:7.1f} chunks/s"
    )
    print(
        f"embedding:      {first_embed_seconds:8.1f} s   {100 * first_embed_seconds / first_seconds:5.1f} % of the "
        f"first import ({first_calls} embedder calls, {first.chunks.embedded} chunks embedded)"
    )
    print(f"re-import:      {second_seconds:8.1f} s   {second.unchanged} unchanged, {spent['calls']} embedder calls")
    print(f"ratio re-import / first import: {second_seconds / first_seconds:.3f}")
    size = sum(len(markdown.encode()) for _, markdown in files) / 1e6
    for label, seconds, timing in (
        ("first import", first_seconds, first_scanning),
        ("re-import", second_seconds, scanning),
    ):
        print(
            f"secret detector, {label}: {timing['find']:.2f} s ({100 * timing['find'] / seconds:.1f} % of the import, "
            f"{size / max(timing['find'], 1e-9):.2f} MB/s over {size:.2f} MB); rendering for the rendered-text scan "
            f"{timing['render']:.2f} s ({100 * timing['render'] / seconds:.1f} %)"
        )

    if not args.keep:
        drop_scratch("brain_bench")


if __name__ == "__main__":
    main()
