"""Recall, false positives and speed of the secret detector on the labelled corpus.

    .venv/bin/python -m bench.secrets [--show-misses 5]

Reads ``bench/data/secrets/planted.jsonl`` and ``ordinary.jsonl`` (written by
``bench/data/build_secrets.py``). A planted value counts as found when the detector's
findings cover its whole span (so ``mask`` removes every character of it). An ordinary
snippet with any finding is a false positive. Also scans the PostgreSQL manual shipped for
the retrieval bench (real prose nobody here wrote) and prints what it flags there, and the
detector's throughput in MB/s on both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from brain.text.secrets import find

DATA = Path(__file__).resolve().parent / "data"


def covered(findings: list, text: str, start: int, end: int) -> bool:  # type: ignore[type-arg]
    """Do the findings cover every character of the value in ``text[start:end]``?

    Characters a disguise added (whitespace, invisible characters, Markdown markers) are not
    part of the value and need not be covered.
    """
    for index in range(start, end):
        char = text[index]
        if char.isspace() or char in "*_~`" or unicodedata.category(char) == "Cf":
            continue
        if not any(finding.start <= index < finding.end for finding in findings):
            return False
    return True


def load(name: str) -> list[dict]:  # type: ignore[type-arg]
    with (DATA / "secrets" / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def throughput(texts: list[str], rounds: int = 3) -> float:
    size = sum(len(text.encode()) for text in texts)
    timings = []
    for _ in range(rounds):
        began = time.perf_counter()
        for text in texts:
            find(text)
        timings.append(time.perf_counter() - began)
    return size / statistics.median(timings) / 1e6


def compare_detect_secrets(planted: list[dict], ordinary: list[dict]) -> None:  # type: ignore[type-arg]
    """The same corpus through Yelp's detect-secrets, when it is installed (it is not a dependency).

    detect-secrets reports values per line without offsets, so a planted value counts as found
    when it reports anything at all for the snippet — a lenient measure in its favour.
    """
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        print("\n(detect-secrets is not installed: `pip install detect-secrets==1.5.0` to compare)")
        return
    import os
    import tempfile

    def reports(text: str) -> bool:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as handle:
            handle.write(text)
        try:
            with default_settings():
                collection = SecretsCollection()
                collection.scan_file(handle.name)
            return any(True for name in collection.files for _ in collection[name])
        finally:
            os.unlink(handle.name)

    found = sum(reports(record["text"]) for record in planted)
    plain = [record for record in planted if record["disguise"] == "plain"]
    found_plain = sum(reports(record["text"]) for record in plain)
    flagged = sum(reports(record["text"]) for record in ordinary)
    print(
        f"\ndetect-secrets 1.5.0 (any report for the snippet): recall {found / len(planted):.3f} "
        f"(plain values only {found_plain / len(plain):.3f}); false-positive rate {flagged / len(ordinary):.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show-misses", type=int, default=3, help="examples of misses and false positives to print")
    args = parser.parse_args()

    planted = load("planted.jsonl")
    ordinary = load("ordinary.jsonl")

    found_by_kind: dict[str, list[bool]] = defaultdict(list)
    found_by_disguise: dict[str, list[bool]] = defaultdict(list)
    misses = []
    for record in planted:
        start, end = record["span"]
        ok = covered(find(record["text"]), record["text"], start, end)
        found_by_kind[record["kind"]].append(ok)
        found_by_disguise[record["disguise"]].append(ok)
        if not ok:
            misses.append(record)

    flagged_by_kind: dict[str, list[bool]] = defaultdict(list)
    false_positives = []
    for record in ordinary:
        findings = find(record["text"])
        flagged_by_kind[record["kind"]].append(bool(findings))
        if findings:
            false_positives.append((record, findings))

    total_found = sum(sum(values) for values in found_by_kind.values())
    print(f"planted values: {len(planted)} of {len(found_by_kind)} kinds; ordinary snippets: {len(ordinary)}")
    print(f"\n{'kind':32} {'n':>4} {'recall':>7}")
    for kind, values in sorted(found_by_kind.items()):
        print(f"{kind:32} {len(values):4d} {sum(values) / len(values):7.3f}")
    print(f"\n{'disguise':32} {'n':>4} {'recall':>7}")
    for how, values in sorted(found_by_disguise.items()):
        print(f"{how:32} {len(values):4d} {sum(values) / len(values):7.3f}")
    print(f"\n{'ordinary kind':32} {'n':>4} {'FP rate':>7}")
    for kind, values in sorted(flagged_by_kind.items()):
        print(f"{kind:32} {len(values):4d} {sum(values) / len(values):7.3f}")
    worst_kind = min(sum(values) / len(values) for values in found_by_kind.values())
    fp_rate = len(false_positives) / len(ordinary)
    print(
        f"\nrecall overall {total_found / len(planted):.4f} (worst kind {worst_kind:.3f}); "
        f"false-positive rate {fp_rate:.4f} ({len(false_positives)}/{len(ordinary)})"
    )
    for record in misses[: args.show_misses]:
        print(f"  missed {record['kind']}/{record['disguise']}: {record['text'][:160]!r}")
    for record, findings in false_positives[: args.show_misses]:
        shown = [(f.kind, record["text"][f.start : f.end][:40]) for f in findings]
        print(f"  false positive {record['kind']}: {record['text'][:100]!r} -> {shown}")

    compare_detect_secrets(planted, ordinary)

    texts = [record["text"] for record in planted + ordinary]
    print(f"\ndetector throughput, labelled corpus: {throughput(texts):.2f} MB/s")
    manual = DATA / "pgdocs" / "corpus.jsonl"
    if manual.exists():
        documents = [json.loads(line)["text"] for line in manual.open(encoding="utf-8")]
        size = sum(len(text.encode()) for text in documents) / 1e6
        flagged: defaultdict[str, int] = defaultdict(int)
        examples: list[tuple[str, str]] = []
        for text in documents:
            for finding in find(text):
                flagged[finding.kind] += 1
                if len(examples) < args.show_misses:
                    examples.append((finding.kind, text[max(0, finding.start - 30) : finding.end + 10]))
        print(
            f"PostgreSQL manual ({len(documents)} pages, {size:.1f} MB of real prose): "
            f"{sum(flagged.values())} findings {dict(flagged)}; throughput {throughput(documents, rounds=1):.2f} MB/s"
        )
        for kind, context in examples:
            print(f"  {kind}: {context!r}")


if __name__ == "__main__":
    main()
