"""The extractive answerer (no model configured) on every judged set: answered, refused, precise?

    .venv/bin/python -m bench.answers                 # every set under bench/data/
    .venv/bin/python -m bench.answers --sets pgdocs

Each set runs in its own child process and throwaway database (loaded as ``bench.retrieval``
does). Every judged query is asked with no model configured, plus ten off-topic questions no
documentation set answers. Prints, per set: the share of answerable questions answered, the
citation precision (cited pages judged relevant to the query), off-topic questions refused,
and the answer time; then the same at other similarity floors and claim margins (how far the
cited page must lead the next), so the shipped ``MIN_SIMILARITY`` and ``CLAIM_MARGIN`` are
measured choices; and the bounds no rule passes: the share of questions whose evidence holds
a page judged relevant, and the precision of citing search's first page. Targets: answered >= 85 %, precision >= 0.8,
off-topic refused >= 9/10, on every set.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.retrieval import each_set, load_corpus, load_jsonl, load_qrels
from bench.scratch import drop_scratch, setup_scratch_django

OFF_TOPIC = [
    "what is the capital of australia",
    "how do i bake sourdough bread at home",
    "who won the football world cup in 1998",
    "best hiking trails in the swiss alps",
    "how to change a flat bicycle tyre",
    "what is the boiling point of water on mount everest",
    "recommend a good science fiction novel",
    "how do vaccines train the immune system",
    "what time zone is tokyo in",
    "how to negotiate a salary raise",
]
FLOORS = (0.35, 0.40, 0.45, 0.50, 0.55)
MARGINS = (0.0, 0.03, 0.06, 0.09)  # tried at the shipped floor


def evaluate(folder: Path) -> dict[str, Any]:
    """Every judged and off-topic question of one set, at each similarity floor and claim margin."""
    database = f"brain_eval_answers_{folder.name}"
    setup_scratch_django(database)
    from answers import services
    from answers.services import Refused, extractive_choose, scored_sentences

    queries = load_jsonl(folder / "queries.jsonl")
    qrels = load_qrels(folder / "qrels.tsv")
    reader, doc_of_path = load_corpus(load_jsonl(folder / "corpus.jsonl"))
    shipped = (services.MIN_SIMILARITY, services.CLAIM_MARGIN)
    settings_tried = sorted({*((floor, shipped[1]) for floor in FLOORS), *((shipped[0], m) for m in MARGINS), shipped})
    # The evidence depends on neither: score every question's sentences once.
    evidence: list[tuple[str, list[Any], float]] = []
    # What bounds precision whatever the rule: does the evidence hold a page judged relevant
    # at all, and is search's own first page relevant (citing it blindly)?
    holds_relevant = first_relevant = 0
    for query in queries:
        started = time.perf_counter()
        try:
            _, scored = scored_sentences(reader, query["text"])
        except Refused:
            scored = []
        evidence.append((query["_id"], scored, time.perf_counter() - started))
        judged = qrels.get(query["_id"], {})
        # The pages the scored sentences come from (search may return more than the sentence cap reads).
        evidence_pages = {item.citation.split("#", 1)[0] for item in scored}
        holds_relevant += any(judged.get(doc_of_path.get(path, ""), 0) > 0 for path in evidence_pages)
        first = next((item.citation.split("#", 1)[0] for item in scored if item.order == 0), "")
        first_relevant += judged.get(doc_of_path.get(first, ""), 0) > 0
    off_topic: list[list[Any]] = []
    for text in OFF_TOPIC:
        try:
            off_topic.append(scored_sentences(reader, text)[1])
        except Refused:
            off_topic.append([])
    rows: dict[str, dict[str, Any]] = {}
    for floor, margin in settings_tried:
        answered = cited = relevant_cited = 0
        for query_id, scored, _ in evidence:
            chosen = extractive_choose(scored, floor=floor, margin=margin).sentences
            if not chosen:
                continue
            answered += 1
            for citation in dict.fromkeys(item.citation for item in chosen):
                cited += 1
                document = doc_of_path.get(citation.split("#", 1)[0], "")
                relevant_cited += qrels.get(query_id, {}).get(document, 0) > 0
        rows[f"{floor:.2f} {margin:.2f}"] = {
            "answered": answered / len(queries),
            "precision": relevant_cited / max(cited, 1),
            "citations": cited / max(answered, 1),
            "off_topic_refused": sum(
                1 for scored in off_topic if not extractive_choose(scored, floor=floor, margin=margin).sentences
            ),
            "p50_ms": statistics.median(seconds for *_, seconds in evidence) * 1000,
        }
    drop_scratch(database)
    return {
        "set": folder.name,
        "queries": len(queries),
        "shipped": f"{shipped[0]:.2f} {shipped[1]:.2f}",
        "rows": rows,
        "holds_relevant": holds_relevant / len(queries),
        "first_relevant": first_relevant / len(queries),
    }


def main() -> None:
    verdicts: list[bool] = []
    for name, result in each_set("bench.answers", __doc__, evaluate):
        if not verdicts:
            print(f"{'set':<11}{'floor':>7}{'margin':>8}{'answered':>10}{'precision':>11}{'cites/answer':>14}"
                  f"{'off-topic refused':>19}{'p50':>8}")  # fmt: skip
        for setting, row in result["rows"].items():
            floor, margin = setting.split()
            mark = "  <- shipped" if setting == result["shipped"] else ""
            print(f"{name:<11}{floor:>7}{margin:>8}{row['answered']:>10.0%}{row['precision']:>11.2f}"
                  f"{row['citations']:>14.2f}{row['off_topic_refused']:>16}/10"
                  f"{row['p50_ms']:>6.0f}ms{mark}")  # fmt: skip
        print(f"{name:<11}bounds: the evidence holds a relevant page for {result['holds_relevant']:.0%} of "
              f"questions; search's first page is relevant for {result['first_relevant']:.0%}")  # fmt: skip
        shipped = result["rows"][result["shipped"]]
        verdicts.append(
            shipped["answered"] >= 0.85 and shipped["precision"] >= 0.8 and shipped["off_topic_refused"] >= 9
        )
    if verdicts:
        print(f"\ntargets (answered >= 85 %, precision >= 0.8, off-topic >= 9/10) on every set: "
              f"{'yes' if all(verdicts) else 'NO'}")  # fmt: skip


if __name__ == "__main__":
    main()
