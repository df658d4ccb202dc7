"""Model instances from one hand-written SQL row.

For the few reads that run on every API request, where the ORM's query compilation cost
more than the query itself: the SQL names each model's columns through ``columns()``, and
``hydrate()`` turns the row back into model instances: each field's own ``from_db_value``
conversion (JSON, pgvector, …), then Django's ``from_db``, so the instances behave as any
ORM-loaded row does.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Model


def _attnames(model: type[Model]) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


@cache
def columns(model: type[Model], alias: str) -> str:
    """The select list of ``model``'s concrete columns, qualified by the table ``alias``."""
    return ", ".join(f"{alias}.{connection.ops.quote_name(name)}" for name in _attnames(model))


def hydrate(row: Sequence[Any], models: Sequence[type[Model]], start: int = 0) -> list[Model]:
    """Instances of ``models`` from ``row``, whose columns (from ``start``) follow ``columns()`` order."""
    instances: list[Model] = []
    position = start
    for model in models:
        fields = model._meta.concrete_fields
        values = [
            field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
            for field, value in zip(fields, row[position : position + len(fields)], strict=True)
        ]
        instances.append(model.from_db(connection.alias, [field.attname for field in fields], values))
        position += len(fields)
    return instances


def fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """Run a hot read and return its first row (or None), as a prepared statement when enabled.

    Only for fixed-shape lookups by key, whose generic plan is the custom one: psycopg keeps
    the statement prepared on the connection, so later calls skip PostgreSQL's planning.
    """
    with connection.cursor() as cursor:
        if settings.BRAIN_DB_PREPARED:
            # Django's wrapper does not pass ``prepare``; the psycopg cursor under it does.
            cursor.cursor.execute(sql, params, prepare=True)
        else:
            cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row) if row is not None else None
