"""Server time of the people's web pages at 10k pages, against a plain page in the same run.

    .venv/bin/python -m bench.web [--pages 10000] [--requests 40]

Builds a throwaway database of ``--pages`` pages (10 synthetic chunks each, as
``bench.search_scale`` does) and a reviewer whose grants reach 10 % of them, with one
build awaiting their review. Each page is requested in-process through Django's test
client (the whole middleware stack, templates included; no network), ``--requests`` times
after warm-up, and its p50/p95 is printed beside a plain view that renders only the base
template — and, for search, beside the search query alone. The goal is each p95 ≤ 3× its
baseline's.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if not __package__:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django
from bench.search_scale import CHUNKS_PER_PAGE, build, percentile

DATABASE = "brain_web_bench"


def timed_round_robin(calls: dict[str, Callable[[], object]], requests: int) -> dict[str, list[float]]:
    """Milliseconds per call, taking each call in turn every round so that every page and its
    baseline see the same machine (on a noisy two-core box, back-to-back blocks did not)."""
    for call in calls.values():  # warm caches and connections
        for _ in range(3):
            call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(requests):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            samples[name].append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="keep the database for --reuse")
    parser.add_argument("--reuse", action="store_true", help="time the database a --keep run left")
    parser.add_argument("--queries", action="store_true", help="also print each page's slowest queries")
    args = parser.parse_args()

    if args.reuse:
        connect_scratch_django(DATABASE)
    else:
        setup_scratch_django(DATABASE)
    try:
        run(args.pages, args.requests, reuse=args.reuse, show_queries=args.queries)
    finally:
        if not args.keep and not args.reuse:
            drop_scratch(DATABASE)


def run(pages: int, requests: int, *, reuse: bool = False, show_queries: bool = False) -> None:
    from django.contrib.auth.decorators import login_required
    from django.http import HttpRequest, HttpResponse
    from django.shortcuts import render
    from django.test import Client
    from django.urls import clear_url_caches, path

    import brain.urls
    from builds.services import build_open, build_submit, build_write_page
    from corpus.models import Page
    from corpus.search import search
    from grants.models import Grant
    from grants.principals import SYSTEM
    from grants.services import member_create
    from tests.base import page_markdown

    if not reuse:
        member_create(actor=SYSTEM, username="owner")
        print(f"building {pages} pages …", flush=True)
        build(pages * CHUNKS_PER_PAGE, random.Random(7))
        # The reviewer reads and approves 2 of the 20 blocks: 10 % of the pages.
        reviewer = member_create(actor=SYSTEM, username="reviewer")
        author = member_create(actor=SYSTEM, username="author")
        Grant.objects.bulk_create(
            [Grant(member=reviewer, path=f"s/b{block:02d}/", permission=3) for block in (0, 1)]
            + [Grant(member=author, path="s/b00/", permission=2)]
        )
        target = Page.objects.filter(path__startswith="s/b00/").order_by("path").first()
        assert target is not None
        change = build_open(actor=author, title="Bench change")
        build_write_page(
            build=change,
            path=target.path,
            markdown=page_markdown(owner="owner", title="Bench page", body="# Bench page\n\nA changed paragraph.\n"),
        )
        change = build_submit(actor=author, build=change)
    from builds.models import Build
    from grants.models import Member

    reviewer = Member.objects.select_related("user").get(user__username="reviewer")
    change = Build.objects.get(title="Bench change")
    target = Page.objects.get(path=change.changes.get().path)

    @login_required
    def plain(request: HttpRequest) -> HttpResponse:
        return render(request, "base.html")

    brain.urls.urlpatterns.append(path("bench-plain", plain))
    clear_url_caches()

    from django.conf import settings

    # The bench measures server time, not the rate limiter: one reviewer sends every request.
    settings.BRAIN_MCP_RATE_LIMITS = {**settings.BRAIN_MCP_RATE_LIMITS, "search": 1_000_000, "read": 1_000_000}
    client = Client(HTTP_HOST="localhost")
    client.force_login(reviewer.user)

    def get(url: str) -> Callable[[], object]:
        def call() -> object:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            return response

        return call

    query = "contract renewal pricing"
    if show_queries:
        slowest_queries(client, [
            "/", "/pages/", f"/pages/{target.path}", f"/pages/{target.path}/history", f"/builds/{change.public_id}/",
        ])  # fmt: skip
    calls: dict[str, Callable[[], object]] = {
        "plain": get("/bench-plain"),
        "search alone": lambda: search(principal=reviewer, query=query, k=30),
        "home": get("/"),
        "browse": get("/pages/"),
        "page": get(f"/pages/{target.path}"),
        "history": get(f"/pages/{target.path}/history"),
        "review": get(f"/builds/{change.public_id}/"),
        "search": get(f"/search?q={query.replace(' ', '+')}"),
    }
    samples = timed_round_robin(calls, requests)
    plain_samples, search_alone = samples["plain"], samples["search alone"]
    rows: list[tuple[str, list[float], str, list[float]]] = [
        (name, samples[name], "plain view", plain_samples) for name in ("home", "browse", "page", "history", "review")
    ]
    rows.append(("search", samples["search"], "search alone", search_alone))

    print(f"\n{pages} pages; reviewer sees 10 %; {requests} requests each (ms, in-process)\n")
    print(f"{'page':<10} {'p50':>8} {'p95':>8}   {'baseline':<13} {'p50':>8} {'p95':>8}   {'p95 ratio':>9}")
    print(f"{'plain':<10} {statistics.median(plain_samples):8.1f} {percentile(plain_samples, 0.95):8.1f}")
    for name, page_samples, baseline_name, baseline in rows:
        ratio = percentile(page_samples, 0.95) / percentile(baseline, 0.95)
        print(
            f"{name:<10} {statistics.median(page_samples):8.1f} {percentile(page_samples, 0.95):8.1f}"
            f"   {baseline_name:<13}"
            f" {statistics.median(baseline):8.1f} {percentile(baseline, 0.95):8.1f}   {ratio:8.2f}×"
            f"{'' if ratio <= 3 else '  (over the 3× goal)'}"
        )


def slowest_queries(client: object, urls: list[str]) -> None:
    """Each page's queries, slowest first (for finding what to fix, not for the table)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for url in urls:
        client.get(url)  # type: ignore[attr-defined]
        with CaptureQueriesContext(connection) as captured:
            client.get(url)  # type: ignore[attr-defined]
        ranked = sorted(captured.captured_queries, key=lambda query: -float(query["time"]))
        total = sum(float(query["time"]) for query in ranked) * 1000
        print(f"\n{url}: {len(ranked)} queries, {total:.1f} ms in the database")
        for query in ranked[:4]:
            print(f"  {float(query['time']) * 1000:6.1f} ms  {query['sql'][:160]}")


def connect_scratch_django(name: str) -> None:
    """Point Django at the database a ``--keep`` run left, without rebuilding it."""
    import os

    from bench.scratch import with_database
    from brain import launcher

    base = os.environ.get("DATABASE_URL") or launcher.ensure_postgres()
    os.environ[launcher.EMBEDDED_MARKER] = "1"
    os.environ["DATABASE_URL"] = with_database(base, name)
    os.environ.setdefault("BRAIN_LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
    import django

    django.setup()


if __name__ == "__main__":
    main()
