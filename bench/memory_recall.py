"""Memory recall latency at 10k and 50k memories, paraphrase recall at that scale, and the
duplicate check's precision and recall.

    .venv/bin/python -m bench.memory_recall [--sizes 10000,50000] [--repeats 3]

For each size it builds a throwaway database: 20 members, memories spread 30 % shared /
70 % personal, 10 % deprecated, dated over a year, with vocabulary text and vectors that
are noisy copies of 500 embedded vocabulary sentences (clustered, as real ones are) whose
words they carry;
among them the reader's own 36 evaluation memories
(``memory.evaluation.paraphrases``) embedded for real. It then times ``memory_recall`` for
the 36 paraphrased questions (query embeddings cached first, so the time is the database
and the re-ranking), and reports recall@3 of the evaluation memories among everything.

The duplicate check is scored on ``DUPLICATE_PAIRS`` (paraphrases vs merely related
sentences) with the real embedder at the two thresholds (0.85 flag, 0.95 block).
"""

from __future__ import annotations

import argparse
import random
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
from bench.search_scale import VOCABULARY, ZIPF_WEIGHTS, percentile

DIMENSIONS = 384
MEMBERS = 20


def build(size: int, rng: random.Random) -> tuple[Any, list[str]]:
    """Load ``size`` memories by COPY (HNSW built afterwards); returns (reader, evaluation ids)."""
    import numpy as np
    from django.db import connection

    from brain import embeddings
    from grants.principals import SYSTEM
    from grants.services import member_create
    from memory.evaluation.paraphrases import PAIRS

    members = [member_create(actor=SYSTEM, username=f"m{i}") for i in range(MEMBERS)]
    reader = members[0]
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS memory_embedding_hnsw")
        cursor.execute("SET maintenance_work_mem = '1GB'")
    evaluation = embeddings.embed([memory for memory, _ in PAIRS])
    # Real embeddings are clustered, not uniform on the sphere (uniform points give an HNSW
    # search no gradient to follow). Synthetic vectors are noisy copies of 500 embedded
    # vocabulary sentences, so the geometry resembles a real brain's.
    centre_texts = [" ".join(rng.choices(VOCABULARY[:400], k=12)) for _ in range(500)]
    centres = embeddings.embed(centre_texts)
    evaluation_ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in PAIRS]
    generator = np.random.default_rng(11)
    # Synthetic vectors stand in for the current model's: recall compares only those.
    model = embeddings.model_id()
    now = time.time()
    raw = connection.connection
    columns = (
        "id, author_id, workspace, content, tags, source, status, importance, kind, volatility, recall_count,"
        " contradiction_wins, contradiction_losses, embedding, embedding_model, lexical, cjk_terms, created_at,"
        " updated_at"
    )

    def row(memory_id: str, author: int, workspace: str, text: str, vector: object, status: str, age: float) -> tuple:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - age))
        literal = "[" + ",".join(f"{v:.5f}" for v in vector) + "]"  # type: ignore[attr-defined]
        # Like a real brain: most memories durable and never recalled, a few recalled often.
        volatility = rng.choices(["durable", "state", "volatile"], weights=[60, 25, 15])[0]
        recalls = min(20, int(rng.expovariate(1.0))) if rng.random() < 0.3 else 0
        return (memory_id, author, workspace, text, "{}", "", status, rng.randint(1, 5),
                rng.choice(["episodic", "semantic"]), volatility, recalls,
                0, 0, literal, model, text, "", stamp, stamp)  # fmt: skip

    with raw.cursor() as cursor, cursor.copy(f"COPY memory_memory ({columns}) FROM STDIN") as copy:
        for memory_id, (text, _), vector in zip(evaluation_ids, PAIRS, evaluation, strict=True):
            copy.write_row(row(memory_id, reader.pk, "personal", text, vector, "draft", rng.uniform(0, 3e7)))
        for start in range(0, size - len(PAIRS), 10000):
            count = min(10000, size - len(PAIRS) - start)
            noise = generator.standard_normal((count, DIMENSIONS)).astype(np.float32) * 0.05
            chosen = generator.integers(0, len(centres), count)
            block = centres[chosen] + noise
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            for centre, vector in zip(chosen, block, strict=True):
                # Its words are its centre sentence's plus a few more: text and vector agree.
                text = centre_texts[centre] + " " + " ".join(rng.choices(VOCABULARY, weights=ZIPF_WEIGHTS, k=8))
                workspace = "company" if rng.random() < 0.3 else "personal"
                status = "deprecated" if rng.random() < 0.1 else rng.choice(["draft", "canonical"])
                author = rng.choice(members).pk
                copy.write_row(row(str(uuid.uuid4()), author, workspace, text, vector, status, rng.uniform(0, 3.15e7)))
    raw.commit() if not raw.autocommit else None
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE INDEX memory_embedding_hnsw ON memory_memory USING hnsw (embedding vector_cosine_ops)"
            " WITH (m = 16, ef_construction = 64)"
        )
        cursor.execute("ANALYZE")
    print(f"  built {size} memories; HNSW index {time.perf_counter() - started:.0f}s", flush=True)
    return reader, evaluation_ids


def duplicate_scores() -> None:
    from brain import embeddings
    from memory.evaluation.paraphrases import DUPLICATE_PAIRS
    from memory.services import DUPLICATE_BLOCK, DUPLICATE_FLAG

    vectors = embeddings.embed([text for a, b, _ in DUPLICATE_PAIRS for text in (a, b)])
    similarities = [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(DUPLICATE_PAIRS))]
    labels = [label for _, _, label in DUPLICATE_PAIRS]
    related = len(labels) - sum(labels)
    print(f"\nduplicate check on {len(labels)} labelled pairs ({sum(labels)} paraphrases, {related} related)")
    for name, threshold in (("flag", DUPLICATE_FLAG), ("block", DUPLICATE_BLOCK)):
        predicted = [similarity >= threshold for similarity in similarities]
        tp = sum(p and t for p, t in zip(predicted, labels, strict=True))
        fp = sum(p and not t for p, t in zip(predicted, labels, strict=True))
        fn = sum(t and not p for p, t in zip(predicted, labels, strict=True))
        precision = tp / (tp + fp) if tp + fp else float("nan")
        recall = tp / (tp + fn) if tp + fn else float("nan")
        print(
            f"  {name:5} >= {threshold:.2f}: precision {precision:.2f}, recall {recall:.2f} (tp {tp}, fp {fp}, fn {fn})"
        )
    worst_related = max(s for s, label in zip(similarities, labels, strict=True) if not label)
    least_paraphrase = min(s for s, label in zip(similarities, labels, strict=True) if label)
    print(f"  highest related-pair similarity {worst_related:.3f}; lowest paraphrase similarity {least_paraphrase:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    name = "brain_bench_memory"
    setup_scratch_django(name)
    from django.core.management import call_command

    from corpus.search import query_vector
    from memory.evaluation.paraphrases import PAIRS
    from memory.recall import memory_recall

    try:
        duplicate_scores()
        for size in (int(s) for s in args.sizes.split(",")):
            print(f"\n{size} memories", flush=True)
            call_command("flush", interactive=False, verbosity=0)
            reader, evaluation_ids = build(size, random.Random(size))
            for _, question in PAIRS:
                query_vector(question)  # cache the query embeddings: time the database and ranking only
            timings: list[float] = []
            hits = 0
            for repeat in range(args.repeats):
                for memory_id, (_, question) in zip(evaluation_ids, PAIRS, strict=True):
                    started = time.perf_counter()
                    results = memory_recall(actor=reader, query=question, top_k=3, count_recall=False).results
                    timings.append((time.perf_counter() - started) * 1000)
                    if repeat == 0:
                        hits += memory_id in {str(item.memory.pk) for item in results}
            print(f"  recall p50 {statistics.median(timings):.1f} ms, p95 {percentile(timings, 0.95):.1f} ms "
                  f"({len(timings)} queries); paraphrase recall@3 among {size}: {hits / len(PAIRS):.3f}")  # fmt: skip
    finally:
        drop_scratch(name)


if __name__ == "__main__":
    main()
