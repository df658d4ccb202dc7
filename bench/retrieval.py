"""Retrieval quality on every judged set: each arm, each fusion and a BM25 baseline, in one table.

    .venv/bin/python -m bench.retrieval                  # every set under bench/data/
    .venv/bin/python -m bench.retrieval --sets pgdocs,pyfaq

Each set (BEIR format: corpus.jsonl, queries.jsonl, qrels.tsv) runs in its own child process
and throwaway database: every document becomes an approved page through the governed write
path (secrets masked as an extraction would), then every query runs through each
configuration at the page level (one result per page, k = 10):

- ``lexical any`` (the default arm: any rare-enough term, BM25-style scoring) and
  ``lexical and`` (every word, ``ts_rank``: the arm before this measurement), ``semantic``;
- fusions of semantic with ``lexical any``: ``rrf`` (k = 60), ``weighted_rrf`` and ``score``
  (min-max) at several weights, ``zscore``; and ``rrf / and``, the default before;
- ``bm25``: rank-bm25 (Okapi) over the same chunks, a page scored by its best chunk.

Prints, per set, nDCG@10, recall@10, MRR@10 and p50/p95 latency; then nDCG@10 of every
configuration on every set with the mean, and whether the default fusion is at least every
arm and BM25 on every set.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
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


# The rules a configuration leaves out are off (search() would otherwise apply the shipped ones).
PLAIN: dict[str, Any] = {
    "fusion_level": "chunk", "coverage_power": 0.0, "lexical_length": 0, "adaptive": False, "page_support": (0.0, 0.0),
}  # fmt: skip
# DEFAULT: the shipped one (brain.settings BRAIN_SEARCH): one vote per page and arm, the lexical
# weight times the share of the query its best match covers and times 4 / content words (≤ 4).
SHIPPED: dict[str, Any] = {
    "fusion_level": "page",
    "coverage_power": 1.0,
    "lexical_length": 4,
    "lexical_length_max": 4.0,
}
# PAGE SUPPORT: a semantic candidate's score plus 0.3 × its page's centroid similarity and
# 0.3 × its second-best chunk's (corpus.page_support).
SUPPORT: dict[str, Any] = {"page_support": (0.3, 0.3)}
LENGTH_3_X2: dict[str, Any] = {"lexical_length": 3, "lexical_length_max": 2.0}
PAGE_COVERAGE: dict[str, Any] = {"fusion_level": "page", "coverage_power": 1.0}
_MEASURED: list[tuple[str, dict[str, Any]]] = [
    ("lexical any", {"arms": ("lexical",)}),
    ("lexical and", {"arms": ("lexical",), "lexical_mode": "and"}),
    ("semantic", {"arms": ("semantic",)}),
    ("semantic support", {"arms": ("semantic",), **SUPPORT}),
    ("rrf / and", {"fusion": "rrf", "lexical_mode": "and"}),  # the default before 2026-12
    ("rrf", {"fusion": "rrf"}),
    ("weighted_rrf 1:0.5", {"fusion": "weighted_rrf", "weights": (1.0, 0.5)}),
    ("weighted_rrf 1:0.3", {"fusion": "weighted_rrf", "weights": (1.0, 0.3)}),
    ("score 1:1", {"fusion": "score", "weights": (1.0, 1.0)}),
    ("score 1:0.5", {"fusion": "score", "weights": (1.0, 0.5)}),
    ("score 1:0.3", {"fusion": "score", "weights": (1.0, 0.3)}),
    ("zscore 1:0.5", {"fusion": "zscore", "weights": (1.0, 0.5)}),
    # ADAPTIVE: the lexical weight scales with how many top pages the arms share.
    ("rrf adaptive", {"fusion": "weighted_rrf", "weights": (1.0, 1.0), "adaptive": True}),
    # LEXICAL_LENGTH: the lexical weight times N / the query's content words (at most MAX).
    ("score 1:0.5 len3 x2", {"fusion": "score", "weights": (1.0, 0.5), **LENGTH_3_X2}),
    # COVERAGE: times the share of the query's term weight the lexical arm's best match holds.
    ("score 1:0.3 cov", {"fusion": "score", "weights": (1.0, 0.3), "coverage_power": 1.0}),
    ("score 1:0.5 cov^2", {"fusion": "score", "weights": (1.0, 0.5), "coverage_power": 2.0}),
    # PAGE: each arm votes once per page, with its best chunk there.
    ("score 1:0.5 page", {"fusion": "score", "weights": (1.0, 0.5), "fusion_level": "page"}),
    ("weighted_rrf 1:0.5 page cov", {"fusion": "weighted_rrf", "weights": (1.0, 0.5), **PAGE_COVERAGE}),
    ("score 1:0.3 page cov", {"fusion": "score", "weights": (1.0, 0.3), **PAGE_COVERAGE}),
    ("zscore 1:0.5 page cov len4", {"fusion": "zscore", "weights": (1.0, 0.5), **SHIPPED}),
    ("score 1:0.3 page cov len4", {"fusion": "score", "weights": (1.0, 0.3), **SHIPPED}),
    ("score 1:0.3 page cov len4 support", {"fusion": "score", "weights": (1.0, 0.3), **SHIPPED, **SUPPORT}),
]  # fmt: skip
CONFIGS = [(name, {**PLAIN, "lexical_mode": "any", **options}) for name, options in _MEASURED]
ARMS = ("lexical any", "lexical and", "semantic", "semantic support")
DATA = Path(__file__).resolve().parent / "data"


def evaluate(folder: Path) -> list[dict[str, Any]]:
    """Every configuration on one set (in this process's own scratch database)."""
    database = f"brain_eval_{folder.name}"
    setup_scratch_django(database)
    from django.db import connection
    from rank_bm25 import BM25Okapi

    from corpus.models import Chunk
    from corpus.search import search

    documents = load_jsonl(folder / "corpus.jsonl")
    queries = load_jsonl(folder / "queries.jsonl")
    qrels = load_qrels(folder / "qrels.tsv")
    reader, doc_of_path = load_corpus(documents)
    from corpus.lexemes import lexeme_statistics_refresh

    lexeme_statistics_refresh(force=True)  # what beat does after a load: the lexical arm's statistics
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # and autovacuum: the planner's
    print(f"{folder.name}: {len(queries)} queries", file=sys.stderr)

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

    for query in queries:  # warm the query-embedding cache so latency measures search, not the model
        search(principal=reader, query=query["text"], k=1, arms=("semantic",))

    rows: list[dict[str, Any]] = []
    for name, options in [*CONFIGS, ("bm25", {})]:
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
                "set": folder.name,
                "name": name,
                "ndcg": statistics.mean(ndcgs),
                "recall": statistics.mean(recalls),
                "mrr": statistics.mean(mrrs),
                "db_p50": percentile(db_ms, 0.5) if db_ms else None,
                "db_p95": percentile(db_ms, 0.95) if db_ms else None,
                "wall_p50": percentile(wall_ms, 0.5),
                "wall_p95": percentile(wall_ms, 0.95),
            }
        )
    drop_scratch(database)
    return rows


def print_set(rows: list[dict[str, Any]]) -> None:
    best_arm = max(row["ndcg"] for row in rows if row["name"] in ARMS)
    bm25_ndcg = next(row["ndcg"] for row in rows if row["name"] == "bm25")
    print(f"\n{rows[0]['set']}")
    print(
        f"{'configuration':<34}{'nDCG@10':>9}{'R@10':>7}{'MRR@10':>8}{'db p50':>9}{'db p95':>9}"
        f"{'wall p50':>10}{'wall p95':>10}{'/best arm':>11}{'/bm25':>7}"
    )

    def ms(value: float | None, width: int) -> str:
        # BM25 runs in Python: it has no database time.
        return f"{'—':>{width}}  " if value is None else f"{value:>{width}.1f}ms"

    for row in rows:
        print(
            f"{row['name']:<34}{row['ndcg']:>9.3f}{row['recall']:>7.3f}{row['mrr']:>8.3f}"
            f"{ms(row['db_p50'], 7)}{ms(row['db_p95'], 7)}{ms(row['wall_p50'], 8)}{ms(row['wall_p95'], 8)}"
            f"{row['ndcg'] / best_arm:>11.3f}{row['ndcg'] / bm25_ndcg:>7.3f}"
        )


def print_summary(results: dict[str, list[dict[str, Any]]], default: str) -> None:
    sets = list(results)
    names = [row["name"] for row in next(iter(results.values()))]
    ndcg_of = {(s, row["name"]): row["ndcg"] for s, rows in results.items() for row in rows}
    print("\nnDCG@10 on every set")
    print(f"{'configuration':<34}" + "".join(f"{s:>11}" for s in sets) + f"{'mean':>9}")
    for name in names:
        values = [ndcg_of[(s, name)] for s in sets]
        mark = "  <- default" if name == default else ""
        print(f"{name:<34}" + "".join(f"{v:>11.3f}" for v in values) + f"{statistics.mean(values):>9.3f}{mark}")
    holds = all(ndcg_of[(s, default)] >= max(ndcg_of[(s, other)] for other in (*ARMS, "bm25")) for s in sets)
    before = statistics.mean(ndcg_of[(s, "rrf / and")] for s in sets)
    now = statistics.mean(ndcg_of[(s, default)] for s in sets)
    print(f"\ndefault ({default}) >= every arm and BM25 on every set: {'yes' if holds else 'NO'}")
    print(f"mean nDCG@10: default {now:.3f} vs the default before (rrf / and) {before:.3f}: {now - before:+.3f}")


def each_set(module: str, doc: str | None, evaluate_one: Any) -> Any:
    """The command line every judged-set bench shares: ``--sets a,b`` (default: every folder
    under bench/data/ with queries), each evaluated by ``python -m <module> --child <set>`` in
    its own process (its own scratch database). Yields (set name, the child's JSON result)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="", help="comma-separated set names under bench/data/ (default: all)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(evaluate_one(DATA / args.child)))
        return
    names = [name for name in args.sets.split(",") if name] or sorted(
        folder.name for folder in DATA.iterdir() if (folder / "queries.jsonl").exists()
    )
    for name in names:
        out = subprocess.run(
            [sys.executable, "-m", module, "--child", name], check=True, capture_output=True, text=True,
            cwd=DATA.parent.parent, env={**os.environ, "BRAIN_LOG_LEVEL": "WARNING"},
        )  # fmt: skip
        yield name, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    results: dict[str, list[dict[str, Any]]] = {}
    for name, rows in each_set("bench.retrieval", __doc__, evaluate):
        results[name] = rows
        print_set(rows)
    if not results:
        return
    print_summary(results, default=_default_name())


def _default_name() -> str:
    """The configuration name of the shipped default (``corpus.search.search_settings``)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
    import django

    django.setup()
    from corpus.search import search_settings

    config = search_settings()
    shipped = {
        "fusion": str(config["FUSION"]),
        "lexical_mode": str(config["LEXICAL"]),
        "weights": (float(config["SEMANTIC_WEIGHT"]), float(config["LEXICAL_WEIGHT"])),
        "adaptive": bool(config["ADAPTIVE"]),
        "lexical_length": int(config["LEXICAL_LENGTH"]),
        "lexical_length_max": float(config["LEXICAL_LENGTH_MAX"]) if int(config["LEXICAL_LENGTH"]) else 1.0,
        "coverage_power": float(config["COVERAGE_POWER"]),
        "fusion_level": str(config["FUSION_LEVEL"]),
        "page_support": (float(config["PAGE_CENTROID_WEIGHT"]), float(config["PAGE_SECOND_WEIGHT"])),
    }
    for name, options in CONFIGS:
        measured = {**options, "lexical_length_max": float(options.get("lexical_length_max", 1.0))}
        same_rules = all(measured.get(key) == value for key, value in shipped.items() if key != "weights")
        same_weights = shipped["fusion"] == "rrf" or options.get("weights") == shipped["weights"]
        if "arms" not in options and same_rules and same_weights:
            return name
    fusion, lexical_mode = shipped["fusion"], shipped["lexical_mode"]
    return f"{fusion} / {lexical_mode}"


if __name__ == "__main__":
    main()
