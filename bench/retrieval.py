"""Retrieval quality: lexical arm, semantic arm, fusions and a BM25 baseline, on a BEIR-format set.

    .venv/bin/python -m bench.retrieval \\
        --corpus bench/data/pgdocs/corpus.jsonl --queries bench/data/pgdocs/queries.jsonl \\
        --qrels bench/data/pgdocs/qrels.tsv

Loads every corpus document as an approved page (one per document, secrets masked as an
extraction would) into a throwaway database through the governed write path, then runs
every query through each configuration at the page level (one result per page, k = 10):

- ``lexical`` and ``semantic``: one arm alone;
- ``rrf`` (k = 60, equal weights), ``weighted_rrf`` and ``score`` (min-max normalised)
  fusions, the weighted ones at several semantic:lexical weights;
- ``bm25``: rank-bm25 (Okapi) over the same chunks, a page scored by its best chunk.

Prints nDCG@10, recall@10, MRR@10 and p50/p95 search latency (database time and wall
time including the cached query embedding), and each fusion's nDCG relative to the
better single arm.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django

K = 10


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    judgements: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)  # header
        for query_id, corpus_id, score in reader:
            if int(score) > 0:
                judgements[query_id][corpus_id] = int(score)
    return judgements


def page_path(doc_id: str) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", doc_id.lower()).strip("-.") or "doc"
    return f"eval/{slug}.md"


def ndcg(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum((2 ** relevant.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:K]))
    ideal = sorted(relevant.values(), reverse=True)[:K]
    idcg = sum((2**grade - 1) / math.log2(i + 2) for i, grade in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked: list[str], relevant: dict[str, int]) -> float:
    return len(set(ranked[:K]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr(ranked: list[str], relevant: dict[str, int]) -> float:
    for index, doc in enumerate(ranked[:K]):
        if doc in relevant:
            return 1.0 / (index + 1)
    return 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load_corpus(documents: list[dict[str, Any]]) -> tuple[Any, dict[str, str]]:
    """Import the documents as pages under ``eval/``; returns (a reader of them, page path → doc id)."""
    from brain.text.secrets import mask
    from builds.services import build_import
    from grants.principals import SYSTEM
    from grants.services import grant_issue, member_create

    reader = member_create(actor=SYSTEM, username="evaluator")
    member_create(actor=SYSTEM, username="owner")
    grant_issue(actor=SYSTEM, member=reader, path="eval/", permission="read")
    doc_of_path: dict[str, str] = {}
    files = []
    for document in documents:
        path = page_path(document["_id"])
        doc_of_path[path] = document["_id"]
        text, _ = mask(document["text"])
        title = document.get("title") or document["_id"]
        markdown = (
            "---\ntype: reference\nowner: owner\nstatus: approved\nchange_policy: gate\nas_of: 2026-11-30\n"
            f"title: {json.dumps(title[:200])}\n---\n\n{text}\n"
        )
        files.append((path, markdown))
    started = time.perf_counter()
    result = build_import(requester=SYSTEM, approver=SYSTEM, files=files)
    seconds = time.perf_counter() - started
    print(f"loaded {len(documents)} documents as pages, {result.chunks.total} chunks in {seconds:.0f}s")
    return reader, doc_of_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("bench/data/pgdocs/corpus.jsonl"))
    parser.add_argument("--queries", type=Path, default=Path("bench/data/pgdocs/queries.jsonl"))
    parser.add_argument("--qrels", type=Path, default=Path("bench/data/pgdocs/qrels.tsv"))
    parser.add_argument("--weights", default="0.5,2,3", help="lexical weights tried (semantic weight 1)")
    parser.add_argument("--keep", action="store_true", help="keep the brain_eval database")
    args = parser.parse_args()

    setup_scratch_django("brain_eval")
    from rank_bm25 import BM25Okapi

    from corpus.models import Chunk
    from corpus.search import search

    documents = load_jsonl(args.corpus)
    queries = load_jsonl(args.queries)
    qrels = load_qrels(args.qrels)
    reader, doc_of_path = load_corpus(documents)
    print(f"{len(queries)} queries")

    # BM25 over the same chunks; a page's score is its best chunk's.
    chunk_pages: dict[str, list[str]] = defaultdict(list)
    for chunk_id, path in Chunk.objects.values_list("id", "revision_links__revision__page__path"):
        if path:
            chunk_pages[chunk_id].append(path)
    chunk_rows = list(Chunk.objects.filter(id__in=list(chunk_pages)).values_list("id", "heading_path", "body"))

    def tokens(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    bm25 = BM25Okapi([tokens(f"{heading} {body}") for _, heading, body in chunk_rows])

    def bm25_ranking(text: str) -> list[str]:
        scores = bm25.get_scores(tokens(text))
        best: dict[str, float] = {}
        for (chunk_id, _, _), score in zip(chunk_rows, scores, strict=True):
            for path in chunk_pages[chunk_id]:
                best[path] = max(best.get(path, float("-inf")), float(score))
        ordered = sorted(best.items(), key=lambda item: -item[1])
        return [doc_of_path[path] for path, _ in ordered[:K]]

    configs: list[tuple[str, dict[str, Any]]] = [
        ("lexical", {"arms": ("lexical",)}),
        ("semantic", {"arms": ("semantic",)}),
        ("rrf", {"fusion": "rrf"}),
    ]
    for weight in (float(w) for w in args.weights.split(",") if w):
        configs.append((f"weighted_rrf 1:{weight:g}", {"fusion": "weighted_rrf", "weights": (1.0, weight)}))
    configs.append(("score 1:1", {"fusion": "score", "weights": (1.0, 1.0)}))
    for weight in (float(w) for w in args.weights.split(",") if w):
        configs.append((f"score 1:{weight:g}", {"fusion": "score", "weights": (1.0, weight)}))

    for query in queries:  # warm the query-embedding cache so latency measures search, not the model
        search(principal=reader, query=query["text"], k=1, arms=("semantic",))

    rows: list[dict[str, Any]] = []
    for name, options in [*configs, ("bm25", {})]:
        ndcgs, recalls, mrrs, db_ms, wall_ms = [], [], [], [], []
        for query in queries:
            relevant = qrels.get(query["_id"], {})
            started = time.perf_counter()
            if name == "bm25":
                ranked = bm25_ranking(query["text"])
            else:
                response = search(principal=reader, query=query["text"], k=K, per_page=1, **options)
                ranked = [doc_of_path[r.path] for r in response.results]
                db_ms.append(response.timings_ms.get("database", 0.0))
            wall_ms.append((time.perf_counter() - started) * 1000)
            ndcgs.append(ndcg(ranked, relevant))
            recalls.append(recall(ranked, relevant))
            mrrs.append(mrr(ranked, relevant))
        rows.append(
            {
                "name": name,
                "ndcg": statistics.mean(ndcgs),
                "recall": statistics.mean(recalls),
                "mrr": statistics.mean(mrrs),
                "db_p50": percentile(db_ms, 0.5) if db_ms else float("nan"),
                "db_p95": percentile(db_ms, 0.95) if db_ms else float("nan"),
                "wall_p50": percentile(wall_ms, 0.5),
                "wall_p95": percentile(wall_ms, 0.95),
            }
        )

    best_arm = max(row["ndcg"] for row in rows if row["name"] in ("lexical", "semantic"))
    bm25_ndcg = next(row["ndcg"] for row in rows if row["name"] == "bm25")
    print(
        f"\n{'configuration':<22}{'nDCG@10':>9}{'R@10':>7}{'MRR@10':>8}{'db p50':>9}{'db p95':>9}"
        f"{'wall p50':>10}{'wall p95':>10}{'/best arm':>11}{'/bm25':>7}"
    )

    def ms(value: float, width: int) -> str:
        # BM25 runs in Python: it has no database time.
        return f"{'—':>{width}}  " if math.isnan(value) else f"{value:>{width}.1f}ms"

    for row in rows:
        print(
            f"{row['name']:<22}{row['ndcg']:>9.3f}{row['recall']:>7.3f}{row['mrr']:>8.3f}"
            f"{ms(row['db_p50'], 8)}{ms(row['db_p95'], 7)}{ms(row['wall_p50'], 8)}{ms(row['wall_p95'], 8)}"
            f"{row['ndcg'] / best_arm:>11.3f}{row['ndcg'] / bm25_ndcg:>7.3f}"
        )
    fused = [row for row in rows if row["name"] not in ("lexical", "semantic", "bm25")]
    winner = max(fused, key=lambda row: row["ndcg"])
    print(
        f"\nbest fusion: {winner['name']} nDCG@10 {winner['ndcg']:.3f} "
        f"({winner['ndcg'] / best_arm:.3f}x the best arm, {winner['ndcg'] / bm25_ndcg:.3f}x BM25)"
    )

    if not args.keep:
        drop_scratch("brain_eval")


if __name__ == "__main__":
    main()
