"""The ZIP export at 1k and 10k readable pages (MB/s, files/s, peak memory) and the git
mirror's first push against an incremental push after one promotion, in one run.

    .venv/bin/python -m bench.export [--pages 10000]

Builds a throwaway database of ``--pages`` pages (as ``bench.search_scale`` does), one
reader who can read all of them and one who can read 10 %. Each export runs in a fresh
child process that streams the whole ZIP to /dev/null, so its peak RSS is that export's
own. Prints seconds, MB/s, files/s and peak RSS for both, and the ratio of peak RSS
(target: the 10k export ≤ 1.5× the 1k one — the export streams in constant memory).

Then a mirror (a service account reading every page) pushes to a local bare repository:
the first, full push, then five single-page promotions each followed by a push. Prints
the full push, the median incremental push and their ratio (target ≤ 0.05).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
    print(json.dumps({"files": counter.files, "zip_bytes": written, "raw_bytes": counter.bytes, "seconds": seconds,
                      "peak_mb": peak_kb / 1024}))  # fmt: skip


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
        build(args.pages * CHUNKS_PER_PAGE, random.Random(7), bodies=True)
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
        mirror = mirror_bench()
    finally:
        drop_scratch(DATABASE)

    print()
    print(f"{'reader':12} {'files':>7} {'MB':>6} {'zip MB':>7} {'s':>6} {'MB/s':>6} {'files/s':>8} {'peak RSS MB':>11}")
    for reader, label in (("reads-tenth", "10 % pages"), ("reads-all", "all pages")):
        r = results[reader]
        megabytes = r["raw_bytes"] / 1e6  # MB/s of Markdown exported (the zip is deflated)
        print(f"{label:12} {r['files']:7d} {megabytes:6.1f} {r['zip_bytes'] / 1e6:7.1f} {r['seconds']:6.2f} "
              f"{megabytes / r['seconds']:6.1f} "
              f"{r['files'] / r['seconds']:8.0f} {r['peak_mb']:11.0f}")  # fmt: skip
    ratio = results["reads-all"]["peak_mb"] / results["reads-tenth"]["peak_mb"]
    print(f"peak RSS, all pages / 10 %: {ratio:.2f}   (target <= 1.5: the export streams)")
    print()
    incremental = statistics.median(mirror["incremental"])
    print(f"mirror, first push of {mirror['files']} files: {mirror['full']:.2f} s")
    print("mirror, push after one promotion: median " f"{incremental:.3f} s of " +
          ", ".join(f"{s:.3f}" for s in mirror["incremental"]))  # fmt: skip
    print(f"incremental / full: {incremental / mirror['full']:.3f}   (target <= 0.05)")


def mirror_bench() -> dict[str, Any]:
    """Seconds for the first push and for each push after a one-page promotion."""
    import tempfile

    from django.test.utils import override_settings

    from corpus.models import Page
    from corpus.services import revision_create, revision_promote
    from grants.models import Grant
    from grants.principals import SYSTEM
    from grants.services import service_account_create
    from mirror.models import Mirror
    from mirror.services import mirror_run, mirror_save

    service = service_account_create(actor=SYSTEM, name="bench-mirror")
    Grant.objects.create(service_account=service, path="", permission=1)
    with tempfile.TemporaryDirectory() as scratch, override_settings(BRAIN_MIRROR_CACHE=Path(scratch) / "cache"):
        remote = Path(scratch) / "remote.git"
        subprocess.run(["git", "init", "--bare", "--quiet", str(remote)], check=True)
        mirror = mirror_save(actor=SYSTEM, mirror=Mirror(name="bench", remote_url=f"file://{remote}",
                                                         branch="main", service_account=service))  # fmt: skip
        started = time.perf_counter()
        first = mirror_run(mirror_id=mirror.pk)
        full = time.perf_counter() - started
        assert first.commit, first.detail
        incremental = []
        for number, page in enumerate(Page.objects.order_by("path")[:5]):
            markdown = (
                "---\ntype: topic\nowner: owner\nstatus: approved\nchange_policy: gate\nas_of: 2026-12-01\n"
                f"title: Changed {number}\n---\n\n# Changed\n\nNew text {number}.\n"
            )
            revision, _ = revision_create(actor=SYSTEM, path=page.path, markdown=markdown)
            revision_promote(actor=SYSTEM, revision=revision)
            started = time.perf_counter()
            if os.environ.get("BENCH_PROFILE") and number == 4:
                import cProfile
                import pstats

                with cProfile.Profile() as profile:
                    outcome = mirror_run(mirror_id=mirror.pk)
                pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
            else:
                outcome = mirror_run(mirror_id=mirror.pk)
            incremental.append(time.perf_counter() - started)
            assert outcome.commit, outcome
            assert outcome.files == 2, outcome  # the page and the README index
    return {"full": full, "incremental": incremental, "files": first.files}


if __name__ == "__main__":
    main()
