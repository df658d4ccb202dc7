"""REST v1 ``GET /api/v1/pages/<path>`` throughput through gunicorn, against a plain view, in one run.

    .venv/bin/python -m bench.rest_throughput [--clients 16] [--seconds 20] [--rounds 3]

The same harness as ``bench.mcp_throughput`` (4 workers x 2 threads on the demo data, a
new connection per request): round by round it drives N concurrent clients at

- ``GET /api/v1/pages/<path>`` with a personal token of the demo member ``alice``
  (token lookup, the surface check, the Redis rate window, the access predicate, the
  page read, pydantic validation and DRF rendering), and
- ``GET /bench/plain``: a plain Django view returning the very bytes the REST call
  returned (same middleware stack, no work).

It prints requests/s and p95 per round, then the medians and the ratio REST/plain
(target >= 0.5). Client and server share the machine's two cores; the ratio is the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2

if not __package__:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.mcp_throughput import Run, drive
from bench.serve import free_port, gunicorn, prepare

PAGE = "topics/pricing/price-list.md"
ROOT = Path(__file__).resolve().parent.parent
MINT_CODE = (
    "from grants.models import Member; from memory.services import api_token_issue; "
    "print(api_token_issue(actor=Member.objects.get(user__username='alice'), name='REST bench', "
    "scopes=['corpus:read'])[1])"
)
CLEANUP_CODE = (
    "from memory.models import MemoryApiToken; from django.utils import timezone; "
    "MemoryApiToken.objects.filter(name='REST bench', revoked_at__isnull=True).update(revoked_at=timezone.now())"
)


def manage_shell(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
        env={**os.environ, "BRAIN_LOG_LEVEL": "WARNING"},
    )  # fmt: skip
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    prepare()
    token = manage_shell(MINT_CODE)
    body_file = Path(tempfile.mkstemp(prefix="brain-bench-plain-", suffix=".json")[1])
    port = free_port()
    env = {
        "DJANGO_SETTINGS_MODULE": "bench.mcp_settings",
        "BRAIN_BENCH_PLAIN_BODY": str(body_file),
        "BRAIN_MCP_RATE_READ": str(10**9),
        "BRAIN_LOG_LEVEL": "WARNING",
        "BRAIN_BASE_URL": f"http://127.0.0.1:{port}",
    }
    headers = {"Authorization": f"Bearer {token}"}
    plain_runs: list[Run] = []
    rest_runs: list[Run] = []
    try:
        with gunicorn(port, env=env) as base_url:
            first = httpx2.get(f"{base_url}/api/v1/pages/{PAGE}", headers=headers, timeout=30)
            if first.status_code != 200:
                raise RuntimeError(f"GET page failed: {first.status_code} {first.text[:300]}")
            body_file.write_bytes(first.content)
            print(f"page: {len(first.content)} bytes; {args.clients} clients, {args.seconds:.0f} s a run")
            for warm in ("/bench/plain", f"/api/v1/pages/{PAGE}"):
                asyncio.run(drive(base_url + warm, headers, None, args.clients, 3, keepalive=False))
            for round_number in range(1, args.rounds + 1):
                for label, url, runs in (("plain", "/bench/plain", plain_runs),
                                         ("rest", f"/api/v1/pages/{PAGE}", rest_runs)):  # fmt: skip
                    run = asyncio.run(drive(base_url + url, headers, None, args.clients, args.seconds, keepalive=False))
                    runs.append(run)
                    print(f"round {round_number} {label:5}  {run.rate:8.1f} req/s  p50 {run.percentile(0.5):6.1f} ms  "
                          f"p95 {run.percentile(0.95):6.1f} ms  errors {run.errors}")  # fmt: skip
    finally:
        body_file.unlink(missing_ok=True)
        manage_shell(CLEANUP_CODE)
    plain_rate = statistics.median(run.rate for run in plain_runs)
    rest_rate = statistics.median(run.rate for run in rest_runs)
    print()
    plain_p95 = statistics.median(run.percentile(0.95) for run in plain_runs)
    rest_p95 = statistics.median(run.percentile(0.95) for run in rest_runs)
    print(f"{'path':28} {'req/s':>8} {'p95 ms':>8}")
    print(f"{'plain Django view':28} {plain_rate:8.1f} {plain_p95:8.1f}")
    print(f"{'REST GET /api/v1/pages/…':28} {rest_rate:8.1f} {rest_p95:8.1f}")
    ratios = ", ".join(f"{r.rate / p.rate:.2f}" for p, r in zip(plain_runs, rest_runs, strict=True))
    print(f"ratio REST/plain (req/s): {rest_rate / plain_rate:.2f}   (target >= 0.5; per round: {ratios})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
