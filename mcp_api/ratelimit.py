"""Per-principal fixed one-minute windows in Redis.

Classes and caps come from ``BRAIN_MCP_RATE_LIMITS``: page reads and lookups high,
searches and state reads in the middle, filing a question low. Over the cap the caller
gets HTTP 429 with ``Retry-After`` set to the seconds left in the window.
"""

from __future__ import annotations

import time
from functools import cache

import redis
from django.conf import settings

WINDOW_SECONDS = 60


class RateLimited(Exception):
    """The caller's window for this class is full; ``retry_after`` seconds until it resets."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"rate limit exceeded; retry after {retry_after} s")
        self.retry_after = retry_after


@cache
def _redis() -> redis.Redis:
    """One connection pool per process, to the Redis the cache uses."""
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)


def caps() -> dict[str, int]:
    defaults = {"read": 600, "search": 120, "ask": 10, "register": 20}
    return {**defaults, **getattr(settings, "BRAIN_MCP_RATE_LIMITS", {})}


def hit(*, principal_key: str, rate_class: str, now: float | None = None) -> None:
    """Count one call; raise ``RateLimited`` when it is over the class's cap for this window."""
    cap = caps().get(rate_class)
    if cap is None:
        return
    moment = time.time() if now is None else now
    window = int(moment // WINDOW_SECONDS)
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
    key = f"{prefix}:mcp-rl:{rate_class}:{principal_key}:{window}"
    # One round trip: create the window's counter with its expiry if new, then count.
    pipe = _redis().pipeline(transaction=False)
    pipe.set(key, 0, ex=WINDOW_SECONDS + 5, nx=True)
    pipe.incr(key)
    count = int(pipe.execute()[1])
    if count > cap:
        raise RateLimited(retry_after=max(1, (window + 1) * WINDOW_SECONDS - int(moment)))
