"""The ZIP export at 1k and 10k readable pages: MB/s, files/s and peak memory, in one run.

    .venv/bin/python -m bench.export [--pages 10000]

Builds a throwaway database of ``--pages`` pages (as ``bench.search_scale`` does), one
reader who can read all of them and one who can read 10 %. Each export runs in a fresh
child process that streams the whole ZIP to /dev/null, so its peak RSS is that export's
own. Prints seconds, MB/s, files/s and peak RSS for both, and the ratio of peak RSS
(target: the 10k export ≤ 1.5× the 1k one — the export streams in constant memory).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

if not __package__:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django
from bench.search_scale import CHUNKS_PER_PAGE, build

DATABASE = "brain_export_bench"
ROOT = Path(__file__).resolve().parent.parent


def child(reader: str) -> None:
    """Export everything ``reader`` can read to /dev/null; print the measurements as JSON."""
    from bench.web import connect_scratch_django

    connect_scratch_django(DATABASE)
    from corpus.export import Counter, corpus_files, zip_stream
    from grants.models import Member

    member = Member.objects.select_related("user").get(user__username=reader)
    counter = Counter()
    written = 0
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        for chunk in zip_stream(corpus_files(member), counter):
            written += sink.write(chunk)
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"files": counter.files, "zip_bytes": written, "seconds": seconds, "peak_mb": peak_kb / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return

    setup_scratch_django(DATABASE)
    try:
        from grants.models import Grant
        from grants.principals import SYSTEM
        from grants.services import member_create

        member_create(actor=SYSTEM, username="owner")
        print(f"building {args.pages} pages …", flush=True)
        build(args.pages * CHUNKS_PER_PAGE, random.Random(7))
        everyone = member_create(actor=SYSTEM, username="reads-all")
        tenth = member_create(actor=SYSTEM, username="reads-tenth")
        Grant.objects.bulk_create(
            [Grant(member=everyone, path="", permission=1)]
            + [Grant(member=tenth, path=f"s/b{block:02d}/", permission=1) for block in (0, 1)]
        )
        results = {}
        for reader in ("reads-tenth", "reads-all"):
            out = subprocess.run(
                [sys.executable, "-m", "bench.export", "--child", reader], cwd=ROOT, check=True,
                capture_output=True, text=True, env={**os.environ, "BRAIN_LOG_LEVEL": "WARNING"},
            )  # fmt: skip
            results[reader] = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        drop_scratch(DATABASE)

    print()
    print(f"{'reader':12} {'files':>7} {'zip MB':>7} {'s':>6} {'MB/s':>6} {'files/s':>8} {'peak RSS MB':>11}")
    for reader, label in (("reads-tenth", "10 % pages"), ("reads-all", "all pages")):
        r = results[reader]
        megabytes = r["zip_bytes"] / 1e6
        print(f"{label:12} {r['files']:7d} {megabytes:7.1f} {r['seconds']:6.2f} {megabytes / r['seconds']:6.1f} "
              f"{r['files'] / r['seconds']:8.0f} {r['peak_mb']:11.0f}")  # fmt: skip
    ratio = results["reads-all"]["peak_mb"] / results["reads-tenth"]["peak_mb"]
    print(f"peak RSS, all pages / 10 %: {ratio:.2f}   (target <= 1.5: the export streams)")


if __name__ == "__main__":
    main()
