"""MCP ``read_page`` throughput through gunicorn, against a plain Django view, in one run.

    .venv/bin/python -m bench.mcp_throughput [--clients 16] [--seconds 20] [--rounds 3] [--keepalive]

Starts gunicorn as the Procfile does (4 workers x 2 threads) on the demo data, connects
the demo member ``alice`` through the real OAuth flow, and then, round by round, drives
N concurrent clients for the given seconds at:

- ``POST /api/mcp`` ``tools/call read_page`` (token lookup, member check, rate-limit
  counter in Redis, the access predicate, the page read, JSON-RPC framing), and
- ``POST /bench/plain``: a plain Django view returning the very bytes ``read_page``
  returned (same middleware stack, no work).

It prints requests/s, p50 and p95 for each round, then the medians and the ratio
MCP/plain (target >= 0.5). By default every request opens a new connection, so requests
spread evenly over gunicorn's workers; with ``--keepalive`` each connection stays on the
worker that accepted it and a run depends on how the connections happened to split.
The per-principal rate limit is lifted for the benchmark's server only. The load
generator runs on the same 2 cores as the server, so absolute numbers are low; the
ratio is the figure to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.oauth_client import connect, disconnect
from bench.serve import demo_password, free_port, gunicorn, prepare

PAGE = "topics/pricing/price-list.md"
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_page", "arguments": {"path": PAGE}}}


@dataclass
class Run:
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


async def drive(
    url: str, headers: dict[str, str], body: bytes | None, clients: int, seconds: float, *, keepalive: bool
) -> Run:
    """``clients`` concurrent loops POSTing ``body`` (or GETting, when it is None) to ``url`` for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients if keepalive else 0)
    async with httpx2.AsyncClient(headers=headers, limits=limits, timeout=30) as http:
        deadline = time.perf_counter() + seconds

        async def loop() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                response = await (http.get(url) if body is None else http.post(url, content=body))
                if response.status_code != 200 or b'"isError": true' in response.content:
                    errors += 1
                latencies.append((time.perf_counter() - started) * 1000)

        began = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(clients)))
        elapsed = time.perf_counter() - began
    return Run(len(latencies), errors, elapsed, latencies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3, help="alternate plain/MCP this many times (median)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (as the Procfile)")
    parser.add_argument("--threads", type=int, default=2, help="threads per worker (as the Procfile)")
    parser.add_argument(
        "--keepalive",
        action="store_true",
        help="reuse connections (gunicorn then pins each one to a worker, and the run depends on how "
        "the 16 connections happened to split between the two workers)",
    )
    args = parser.parse_args()

    prepare()
    body_file = Path(tempfile.mkstemp(prefix="brain-bench-plain-", suffix=".json")[1])
    env = {
        "DJANGO_SETTINGS_MODULE": "bench.mcp_settings",
        "BRAIN_BENCH_PLAIN_BODY": str(body_file),
        "BRAIN_MCP_RATE_READ": str(10**9),
        "BRAIN_LOG_LEVEL": "WARNING",
    }
    port = free_port()
    env["BRAIN_BASE_URL"] = f"http://127.0.0.1:{port}"
    try:
        with gunicorn(port, env=env, workers=args.workers, threads=args.threads) as base_url:
            connection = connect(base_url, "alice", demo_password(), client_name="MCP throughput bench")
            headers = {"Authorization": f"Bearer {connection.access_token}", "Content-Type": "application/json"}
            payload = json.dumps(CALL).encode()
            first = httpx2.post(f"{base_url}/api/mcp", content=payload, headers=headers, timeout=30)
            if first.status_code != 200 or first.json().get("result", {}).get("isError", True):
                raise RuntimeError(f"read_page failed: {first.status_code} {first.text[:300]}")
            body_file.write_bytes(first.content)
            mode = "keep-alive" if args.keepalive else "a new connection per request"
            print(f"read_page: {len(first.content)} bytes; {args.clients} clients, {args.seconds:.0f} s a run; {mode}")
            # Warm both paths (connections, worker imports, caches) before measuring.
            for warm in ("/bench/plain", "/api/mcp"):
                asyncio.run(drive(base_url + warm, headers, payload, args.clients, 3, keepalive=args.keepalive))
            plain_runs: list[Run] = []
            mcp_runs: list[Run] = []
            for round_number in range(1, args.rounds + 1):
                for label, url, runs in (("plain", "/bench/plain", plain_runs), ("mcp", "/api/mcp", mcp_runs)):
                    run = asyncio.run(
                        drive(base_url + url, headers, payload, args.clients, args.seconds, keepalive=args.keepalive)
                    )
                    runs.append(run)
                    print(f"round {round_number} {label:5}  {run.rate:8.1f} req/s  p50 {run.percentile(0.5):6.1f} ms  "
                          f"p95 {run.percentile(0.95):6.1f} ms  errors {run.errors}")  # fmt: skip
            disconnect(connection)
    finally:
        body_file.unlink(missing_ok=True)
    plain_rate = statistics.median(run.rate for run in plain_runs)
    mcp_rate = statistics.median(run.rate for run in mcp_runs)
    plain_p95 = statistics.median(run.percentile(0.95) for run in plain_runs)
    mcp_p95 = statistics.median(run.percentile(0.95) for run in mcp_runs)
    print()
    print(f"{'path':24} {'req/s':>8} {'p95 ms':>8}")
    print(f"{'plain Django view':24} {plain_rate:8.1f} {plain_p95:8.1f}")
    print(f"{'MCP read_page':24} {mcp_rate:8.1f} {mcp_p95:8.1f}")
    ratios = ", ".join(f"{m.rate / p.rate:.2f}" for p, m in zip(plain_runs, mcp_runs, strict=True))
    print(f"ratio MCP/plain (req/s): {mcp_rate / plain_rate:.2f}   (target >= 0.5; per round: {ratios})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
