"""Run the real web server for a benchmark or the conformance suite.

``prepare()`` brings up the embedded (or configured) PostgreSQL and Redis, migrates and
loads the demo organisation, exactly as ``make run`` does. ``gunicorn()`` starts the same
gunicorn command as the Procfile on a free loopback port and yields its URL once
``/healthz`` answers.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from brain import launcher  # noqa: E402


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def prepare() -> None:
    """Services up, migrations applied, demo data loaded (idempotent)."""
    launcher.configure_environment()
    for args in (["migrate", "--noinput", "--verbosity", "0"], ["demo_seed"]):
        subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)  # fmt: skip


def demo_password() -> str:
    configured = os.environ.get("BRAIN_DEMO_PASSWORD", "").strip()
    return configured or (launcher.var_dir() / "demo-password").read_text().strip()


@contextmanager
def gunicorn(port: int, *, env: dict[str, str] | None = None, workers: int = 4, threads: int = 2) -> Iterator[str]:
    """Serve ``brain.wsgi`` on 127.0.0.1:``port``; yields the base URL; stops it afterwards."""
    command = [
        sys.executable, "-m", "gunicorn", "brain.wsgi", "--bind", f"127.0.0.1:{port}",
        "--workers", str(workers), "--threads", str(threads), "--timeout", "60", "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {process.returncode} before answering")
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:  # noqa: S310 (loopback)
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not answer /healthz within 90 s")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
