"""Redis outages as one process sees them: a short memory that Redis did not answer.

Redis holds the cache, the rate-limit windows and the Celery broker, and none of them may
turn a Redis outage into failed requests (docs/operations.md, "Outages"). The callers that
can do without Redis — the cache (``brain.cache``) and the rate limiter
(``brain.ratelimit``) — ask ``REDIS.skip()`` first: after a failure they go without Redis
for ``BRAIN_REDIS_RETRY_SECONDS`` instead of paying a connect timeout on every call, and the
start and the end of an outage are each logged once per process, not once per request.
``/healthz`` never skips: it always asks Redis itself.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

# What a Redis that is down, restarting or unreachable raises (redis-py wraps most socket
# errors in ConnectionError/TimeoutError; a few OSErrors escape it).
ERRORS: tuple[type[Exception], ...] = (redis.RedisError, OSError)


class Outage:
    """Whether ``name`` failed recently in this process (thread-safe)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._down = False
        self._retry_at = 0.0  # time.monotonic() before which callers do without the server

    def skip(self) -> bool:
        """True while a failure is fresh: do without the server rather than wait on it again."""
        return time.monotonic() < self._retry_at

    def failed(self, exc: BaseException) -> None:
        """Record a failure; the first of an outage is logged (as a warning, with the reason)."""
        retry = float(settings.BRAIN_REDIS_RETRY_SECONDS)
        with self._lock:
            first = not self._down
            self._down = True
            self._retry_at = time.monotonic() + retry
        if first:
            logger.warning(
                "%s unreachable (%s); cache reads miss and rate limits count per process until it answers",
                self.name,
                type(exc).__name__,
            )

    def answered(self) -> None:
        """Record a success; the end of an outage is logged once."""
        if not self._down:  # the common case: no lock, no log
            return
        with self._lock:
            ended, self._down = self._down, False
            self._retry_at = 0.0
        if ended:
            logger.warning("%s answers again; rate limits are shared again", self.name)


# One Redis serves the cache and the rate limits (``REDIS_URL``).
REDIS = Outage("redis")
