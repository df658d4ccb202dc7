"""A throwaway database for benchmarks, on the configured (or embedded) PostgreSQL server."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def setup_scratch_django(name: str) -> str:
    """Create database ``name`` afresh, point Django at it, set up and migrate. Returns its URL."""
    import psycopg

    from brain import launcher

    base = os.environ.get("DATABASE_URL")
    if not base:
        base = launcher.ensure_postgres()
        os.environ[launcher.EMBEDDED_MARKER] = "1"  # still the one-machine setup
    with psycopg.connect(with_database(base, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = with_database(base, name)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("BRAIN_LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return url


def drop_scratch(name: str) -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(with_database(os.environ["DATABASE_URL"], "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
