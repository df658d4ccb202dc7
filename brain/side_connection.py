"""A second connection to the database, in autocommit: writes that outlive the caller's transaction.

A long all-or-nothing job (an import storing thousands of memories in one transaction) must
still tell the person waiting how far it got, and keep its lease alive for the sweep; neither
can go through the job's own connection, whose writes nobody sees before the commit (and
which a rollback would undo). ``side_connection`` opens a fresh connection to the same
database with the same settings, in autocommit: each statement is visible to everyone at
once and is not undone when the job's transaction rolls back.

Use it for small bookkeeping rows only (progress, heartbeats), never for the job's results:
those belong to the job's transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper


@contextlib.contextmanager
def side_connection(alias: str = DEFAULT_DB_ALIAS) -> Iterator[BaseDatabaseWrapper]:
    """A connection of its own to ``alias``'s database (autocommit, closed on exit)."""
    side = connections.create_connection(alias)
    try:
        yield side
    finally:
        side.close()
