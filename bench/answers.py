"""The extractive answerer on the PostgreSQL-manual evaluation set: answered, refused, precise?

    .venv/bin/python -m bench.answers

Loads ``bench/data/pgdocs`` as pages (as ``bench.retrieval`` does), asks every judged query
with no model configured (the extractive mode), plus off-topic questions the manual cannot
answer, and prints the share answered and refused, and the citation precision: the share
of cited pages that are judged relevant to the query.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.retrieval import load_corpus, load_jsonl, load_qrels
from bench.scratch import drop_scratch, setup_scratch_django

DATA = Path(__file__).resolve().parent / "data" / "pgdocs"
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


def main() -> None:
    name = "brain_eval_answers"
    setup_scratch_django(name)
    from answers.services import Refused, extractive

    try:
        queries = load_jsonl(DATA / "queries.jsonl")
        qrels = load_qrels(DATA / "qrels.tsv")
        reader, doc_of_path = load_corpus(load_jsonl(DATA / "corpus.jsonl"))
        answered = refused = cited = relevant_cited = 0
        timings = []
        for query in queries:
            started = time.perf_counter()
            try:
                outcome = extractive(reader, query["text"])
            except Refused:
                refused += 1
                continue
            finally:
                timings.append(time.perf_counter() - started)
            answered += 1
            for citation in outcome.citations:
                cited += 1
                document = doc_of_path.get(citation.split("#", 1)[0], "")
                relevant_cited += qrels.get(query["_id"], {}).get(document, 0) > 0
        off_refused = 0
        for text in OFF_TOPIC:
            try:
                extractive(reader, text)
            except Refused:
                off_refused += 1
        total = len(queries)
        share = f"answered {answered} ({answered / total:.0%}), refused {refused} ({refused / total:.0%})"
        print(f"judged queries: {total}; {share}")
        precision = relevant_cited / max(cited, 1)
        print(f"citation precision (cited pages judged relevant): {relevant_cited}/{cited} = {precision:.2f}")
        print(f"off-topic questions refused: {off_refused}/{len(OFF_TOPIC)}")
        timings.sort()
        print(f"extractive answer time p50 {timings[len(timings) // 2] * 1000:.0f} ms")
    finally:
        drop_scratch(name)


if __name__ == "__main__":
    main()
