"""Shared pytest configuration: real Postgres + pgvector and Redis (embedded by default)."""

from __future__ import annotations

import pytest
from django.db import connection


@pytest.fixture(autouse=True, scope="session")
def _refuse_other_engines(django_db_setup: None, django_db_blocker: pytest.FixtureRequest) -> None:
    """The suite runs on PostgreSQL with pgvector, never on a stand-in."""
    assert connection.vendor == "postgresql", "tests must run on PostgreSQL with pgvector"
