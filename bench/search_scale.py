"""Search latency at scale, with the access predicate inside the candidate SQL.

    .venv/bin/python -m bench.search_scale [--sizes 10000,100000] [--queries 30]

For each corpus size it builds a throwaway database of pages with 10 chunks each
(synthetic unit vectors and vocabulary text; real vectors are not needed to time the
index), under paths ``s/bNN/gM/`` — 20 blocks of 5 groups, each group 1 % of the corpus —
and principals holding 1, 10 or 100 grants that make 5 % to 100 % of it visible. It
prints p50/p95 *database* time (the query embedding is cached beforehand, so excluded)
for fused, semantic and lexical search, and the ratios of each row's fused p95 to the
unfiltered (system) fused p95 and to its own semantic arm's p95. Principals and arms are
timed interleaved, query by query, over ``--rounds`` rounds, so the ratios compare times taken
side by side on a noisy machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django

WORDS = (
    "contract renewal pricing discount approval escalation account invoice onboarding incident "
    "postmortem runbook deployment rollback database backup restore retention policy security access "
    "audit compliance billing forecast budget hiring interview roadmap milestone dependency risk "
    "customer support ticket release feature latency throughput capacity migration schema index"
).split()
CHUNKS_PER_PAGE = 10
# A Zipf-distributed vocabulary of 5,000 pseudo-words: like real prose, a two-word query
# matches a small share of chunks (a 50-word vocabulary would match half the corpus).
_SYLLABLES = [c + v for c in "bcdfgklmnprstvz" for v in "aeiou"]
VOCABULARY = WORDS + [
    _SYLLABLES[i % 75] + _SYLLABLES[(i // 75) % 75] + _SYLLABLES[(i * 7) % 75] for i in range(5000 - len(WORDS))
]
ZIPF_WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
DIMENSIONS = 384


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _body(number: int) -> str:
    return f"# Page {number}\n\n" + f"A sentence of ordinary length about page {number} and its subject. " * 40


def build(size: int, rng: random.Random, bodies: bool = False) -> None:
    """Pages, revisions, chunks and links via COPY; the HNSW index is built after loading.

    ``bodies``: give each revision a body of a few kilobytes, different on every page (the
    search bench reads chunks only; the export and mirror benches read bodies).
    """
    import numpy as np
    from django.db import connection

    from corpus.models import Page, Revision
    from grants.models import Member

    owner = Member.objects.get(user__username="owner")
    pages = size // CHUNKS_PER_PAGE
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
        cursor.execute("SET maintenance_work_mem = '1GB'")
    revisions = Revision.objects.bulk_create(
        [
            Revision(path=f"p{i}", frontmatter={}, body=_body(i) if bodies else "", sha256="0" * 64)
            for i in range(pages)
        ],
        batch_size=5000,
    )
    Page.objects.bulk_create(
        [
            Page(
                path=f"s/b{i % 20:02d}/g{(i // 20) % 5}/p{i}.md",
                current_revision=revision,
                title=f"Page {i}",
                type="topic",
                owner=owner,
                status="approved",
                sensitivity=0,
                as_of="2026-11-30",
            )
            for i, revision in enumerate(revisions)
        ],
        batch_size=5000,
    )
    generator = np.random.default_rng(7)
    raw = connection.connection
    with raw.cursor() as cursor:
        with cursor.copy(
            "COPY corpus_chunk (id, heading_path, body, embedding, embedding_model, lexical_heading, lexical_body,"
            " cjk_terms, created_at) FROM STDIN"
        ) as copy:
            for start in range(0, size, 10000):
                block = generator.standard_normal((min(10000, size - start), DIMENSIONS)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                for offset, vector in enumerate(block):
                    index = start + offset
                    body = " ".join(rng.choices(VOCABULARY, weights=ZIPF_WEIGHTS, k=40))
                    literal = "[" + ",".join(f"{v:.5f}" for v in vector) + "]"
                    copy.write_row(
                        (f"{index:064x}", f"Section {index % 7}", body, literal, "synthetic", f"Section {index % 7}",
                         body, "", "2026-11-30T00:00:00Z")
                    )  # fmt: skip
        with cursor.copy("COPY corpus_revisionchunk (revision_id, chunk_id, ordinal) FROM STDIN") as copy:
            for index in range(size):
                copy.write_row((revisions[index // CHUNKS_PER_PAGE].pk, f"{index:064x}", index % CHUNKS_PER_PAGE))
    raw.commit() if not raw.autocommit else None
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE INDEX chunk_embedding_hnsw ON corpus_chunk USING hnsw (embedding vector_cosine_ops)"
            " WITH (m = 16, ef_construction = 64)"
        )
        cursor.execute("ANALYZE")
    print(f"  built {size} chunks / {pages} pages; HNSW index {time.perf_counter() - started:.0f}s", flush=True)


def principals() -> list[tuple[str, object]]:
    from grants.models import Grant, Member
    from grants.principals import SYSTEM

    layouts = {
        "1 grant, 5 %": ["s/b00/"],
        "1 grant, 100 %": ["s/"],
        "10 grants, 10 %": [f"s/b{b:02d}/g0/" for b in range(10)],
        "10 grants, 50 %": [f"s/b{b:02d}/" for b in range(10)],
        "100 grants, 5 %": [f"s/b{b:02d}/g{g}/" for b, g in [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]]
        + [f"elsewhere/x{i}/" for i in range(95)],
        "100 grants, 100 %": [f"s/b{b:02d}/g{g}/" for b in range(20) for g in range(5)],
    }
    result: list[tuple[str, object]] = [("unfiltered (system)", SYSTEM)]
    for number, (label, paths) in enumerate(layouts.items()):
        from grants.services import member_create

        member = member_create(actor=SYSTEM, username=f"reader{number}")
        Grant.objects.bulk_create([Grant(member=member, path=path, permission=1) for path in paths])
        result.append((label, Member.objects.get(pk=member.pk)))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (after one warm-up round)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    setup_scratch_django("brain_scale")
    from corpus.search import query_vector, search
    from grants.principals import SYSTEM
    from grants.services import member_create

    member_create(actor=SYSTEM, username="owner")
    who = principals()
    rng = random.Random(11)
    texts = [" ".join(rng.sample(VOCABULARY[20:400], 2)) for _ in range(args.queries)]
    for text in texts:
        query_vector(text)  # cached: the timings below are database time only

    arms = {"fused": ("semantic", "lexical"), "semantic": ("semantic",), "lexical": ("lexical",)}
    for size in (int(s) for s in args.sizes.split(",")):
        from corpus.models import Chunk, Page, Revision, RevisionChunk

        RevisionChunk.objects.all().delete()
        Page.objects.all().delete()
        Revision.objects.all().delete()
        Chunk.objects.all()._raw_delete(Chunk.objects.db)
        print(f"\n{size} chunks", flush=True)
        build(size, rng)
        from django.db import connection

        from corpus.lexemes import lexeme_statistics_refresh

        lexeme_statistics_refresh(force=True)  # as beat would: the lexical arm's term statistics
        with connection.cursor() as cursor:  # and autovacuum: the planner's
            cursor.execute("ANALYZE")
        print(
            f"{'principal':<22}"
            + "".join(f"{arm + ' p50/p95 ms':>24}" for arm in arms)
            + f"{'fused p95/unfiltered':>22}{'fused p95/semantic':>20}"
        )
        # Interleaved: every round times each query for every principal and arm back to back,
        # so a slow spell of this shared machine lands on all of them alike and the ratios
        # compare like with like. A query's time is its median over the rounds; the first
        # round only warms caches.
        samples: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for round_number in range(args.rounds + 1):
            for text in texts:
                for label, principal in who:
                    for arm, arm_names in arms.items():
                        response = search(principal=principal, query=text, k=10, arms=arm_names)  # type: ignore[arg-type]
                        if round_number:
                            samples[(label, arm, text)].append(response.timings_ms["database"])
        baseline: float | None = None
        for label, _ in who:
            cells = []
            p95_of: dict[str, float] = {}
            for arm in arms:
                timings = [statistics.median(samples[(label, arm, text)]) for text in texts]
                p50, p95_of[arm] = statistics.median(timings), percentile(timings, 0.95)
                cells.append(f"{p50:>12.1f} / {p95_of[arm]:>7.1f}")
            if baseline is None:
                baseline = p95_of["fused"]
            print(
                f"{label:<22}" + "".join(f"{cell:>24}" for cell in cells)
                + f"{p95_of['fused'] / baseline:>22.2f}{p95_of['fused'] / p95_of['semantic']:>20.2f}",
                flush=True,
            )  # fmt: skip

    if not args.keep:
        drop_scratch("brain_scale")


if __name__ == "__main__":
    main()
