"""``GET /healthz``: is the database, pgvector and Redis reachable?

Anyone may ask (a load balancer holds no credential) and learns only up or down, each
component's and the whole. The details — the version, pgvector's version and the apps'
details below — go only to a signed-in administrator (``is_staff``, kept with the member's
role) or to a monitor sending ``Authorization: Bearer <BRAIN_HEALTH_TOKEN>``: a version
tells an attacker which advisories apply, and mirror names can say what the organisation
is working on.

Redis is asked in both of its roles: the Celery broker (``CELERY_BROKER_URL``) and the cache
and rate limits (``REDIS_URL``) — usually one server; ``redis`` is ``down`` when either is.

Apps add details of their own with ``register_detail`` (the git mirrors' states): shown when
the database is up, never deciding the status code — a mirror whose remote moved needs an
administrator, not a restart — but listed under ``attention`` when not ``ok``.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

import brain

logger = logging.getLogger(__name__)

_DETAILS: dict[str, Callable[[], dict[str, str] | None]] = {}


def register_detail(name: str, read: Callable[[], dict[str, str] | None]) -> None:
    """Show ``read()`` (names → states, or None to show nothing) under ``name`` in /healthz."""
    _DETAILS[name] = read


def _details(body: dict[str, Any]) -> None:
    for name, read in _DETAILS.items():
        try:
            states = read()
        except DatabaseError:
            logger.warning("healthz: %s unreadable", name, exc_info=True)
            continue
        if states:
            body[name] = states
            body.setdefault("attention", []).extend(
                f"{name}.{key}: {state}" for key, state in states.items() if state not in ("ok", "new")
            )


def _check_database() -> tuple[bool, str | None]:
    """(database reachable, pgvector version or None)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except DatabaseError:
        logger.warning("healthz: database unreachable", exc_info=True)
        return False, None
    return True, (row[0] if row else None)


def _ping(url: str, role: str) -> bool:
    """Whether the Redis at ``url`` answers PING within a second (always asked: no outage memory)."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError):
        logger.warning("healthz: %s unreachable", role)
        return False


def _may_see_details(request: HttpRequest, database_ok: bool) -> bool:
    """A monitor with the health token, or a signed-in administrator (read only while the
    database answers: the session and the user live there)."""
    token = settings.BRAIN_HEALTH_TOKEN
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(presented.encode(), token.encode()):
        return True
    if not database_ok or settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return False
    try:
        user = request.user
        return bool(user.is_active and user.is_staff)
    except DatabaseError:
        logger.warning("healthz: the session could not be read", exc_info=True)
        return False


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 with each component's state when all are up; 503 naming what is down. The
    version and the apps' details only to whom ``_may_see_details`` admits."""
    database_ok, pgvector = _check_database()
    broker_ok = _ping(settings.CELERY_BROKER_URL, "broker")
    cache_ok = broker_ok if settings.REDIS_URL == settings.CELERY_BROKER_URL else _ping(settings.REDIS_URL, "cache")
    body: dict[str, Any] = {
        "ok": database_ok and pgvector is not None and broker_ok and cache_ok,
        "database": "ok" if database_ok else "down",
        "pgvector": "ok" if pgvector else ("missing" if database_ok else "unknown"),
        "redis": "ok" if broker_ok and cache_ok else "down",
        "broker": "ok" if broker_ok else "down",
        "cache": "ok" if cache_ok else "down",
    }
    if _may_see_details(request, database_ok):
        body["version"] = brain.__version__
        if pgvector:
            body["pgvector"] = pgvector
        if database_ok:
            _details(body)
    if not body["ok"]:
        down = [name for name in ("database", "broker", "cache") if body[name] == "down"]
        if database_ok and pgvector is None:
            down.append("pgvector")
        body["down"] = down
    return JsonResponse(body, status=200 if body["ok"] else 503)
