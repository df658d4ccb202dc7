"""The cache backend: Django's Redis cache, for which Redis being down is a miss, not an error.

What is cached here is a copy of what PostgreSQL holds (prompt capsules, keyed by the
layer's revision so a stale copy is never served), so losing the cache costs time, never
correctness. While Redis does not answer:

- reads (``get``, ``get_many``, ``has_key``) miss, and the caller computes from the database;
- writes (``set``, ``set_many``, ``add``, ``touch``, ``delete``, ``delete_many``) do nothing
  (``add``/``touch``/``delete`` return False) — so nothing may rely on a delete reaching
  Redis for correctness: key by a version instead, as the capsules do;
- ``incr``/``decr`` and ``clear`` still raise: a counter that silently stays put or a flush
  that silently did not happen would be wrong answers, not misses.

Failures and recoveries go through ``brain.redis_outage.REDIS`` (logged once per outage).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from django.core.cache.backends.redis import RedisCache, RedisCacheClient

from brain.redis_outage import ERRORS, REDIS

_T = TypeVar("_T")


def _attempt(call: Callable[..., _T], fallback: _T, *args: Any) -> _T:
    """``call(*args)``, or ``fallback`` when Redis fails now or failed a moment ago."""
    if REDIS.skip():
        return fallback
    try:
        result = call(*args)
    except ERRORS as exc:
        REDIS.failed(exc)
        return fallback
    REDIS.answered()
    return result


class ResilientRedisCacheClient(RedisCacheClient):
    """The client under ``ResilientRedisCache``: each value operation guarded by ``_attempt``."""

    def get(self, key: Any, default: Any) -> Any:
        return _attempt(super().get, default, key, default)

    def get_many(self, keys: Iterable[Any]) -> dict[Any, Any]:
        return _attempt(super().get_many, {}, keys)

    def has_key(self, key: Any) -> bool:
        return _attempt(super().has_key, False, key)

    def set(self, key: Any, value: Any, timeout: Any) -> None:
        _attempt(super().set, None, key, value, timeout)

    def set_many(self, data: Mapping[Any, Any], timeout: Any) -> None:
        _attempt(super().set_many, None, data, timeout)

    def add(self, key: Any, value: Any, timeout: Any) -> bool:
        return _attempt(super().add, False, key, value, timeout)

    def touch(self, key: Any, timeout: Any) -> bool:
        return _attempt(super().touch, False, key, timeout)

    def delete(self, key: Any) -> bool:
        return _attempt(super().delete, False, key)

    def delete_many(self, keys: Iterable[Any]) -> None:
        _attempt(super().delete_many, None, keys)


class ResilientRedisCache(RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with ``ResilientRedisCacheClient``."""

    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ResilientRedisCacheClient
