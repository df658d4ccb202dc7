"""Per-principal fixed one-minute windows in Redis, shared by every surface.

Classes and caps come from ``BRAIN_MCP_RATE_LIMITS``: page reads and lookups high,
searches and state reads in the middle, writes that compute an embedding lower, bulk
embedding counted per record, uploads and imports low, filing a question lowest. One
person's MCP clients, REST tokens and browser share each window (the key is the member),
so no surface is a way around another's cap. Over the cap the caller gets HTTP 429 with
``Retry-After`` set to the seconds left in the window.

While Redis does not answer, the limits fail open *to this process*: every class is still
counted against the same caps, in windows kept in this process's memory, so nothing fails
because Redis is down and no caller is unlimited — at most the cap once per web process
(docs/operations.md, "Outages"). Failing closed would make a Redis outage a write outage,
and the costly work behind the dearest classes (extractions, answers) cannot start anyway
until workers reach the broker again. The switch and the return are logged once each
(``brain.redis_outage``).
"""

from __future__ import annotations

import threading
import time
from functools import cache

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from brain.redis_outage import ERRORS, REDIS

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
    defaults = {
        "read": 600, "search": 120, "write": 120, "import": 1000, "upload": 20, "ask": 10, "register": 20, "token": 60,
        "signin": 60,
    }  # fmt: skip
    return {**defaults, **getattr(settings, "BRAIN_MCP_RATE_LIMITS", {})}


def hit(*, principal_key: str, rate_class: str, now: float | None = None, cost: int = 1) -> None:
    """Count one call (``cost`` units of it); raise ``RateLimited`` when over the class's cap for this window."""
    cap = caps().get(rate_class)
    if cap is None:
        return
    moment = time.time() if now is None else now
    window = int(moment // WINDOW_SECONDS)
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
    key = f"{prefix}:mcp-rl:{rate_class}:{principal_key}:{window}"
    count = _count(key, window, max(1, cost))
    if count > cap:
        raise RateLimited(retry_after=max(1, (window + 1) * WINDOW_SECONDS - int(moment)))


def _count(key: str, window: int, cost: int) -> int:
    """The window's count after adding ``cost``: Redis's, shared by every process; this
    process's own while Redis is not answering."""
    if not REDIS.skip():
        try:
            # One round trip: create the window's counter with its expiry if new, then count.
            pipe = _redis().pipeline(transaction=False)
            pipe.set(key, 0, ex=WINDOW_SECONDS + 5, nx=True)
            pipe.incrby(key, cost)
            count = int(pipe.execute()[1])
        except ERRORS as exc:
            REDIS.failed(exc)
        else:
            REDIS.answered()
            return count
    return _LOCAL.count(key, window, cost)


class _LocalWindows:
    """This process's windows, for Redis outages: counts of the current window only (the
    dictionary starts afresh when the window turns, so it never grows past one minute's callers)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window = -1
        self._counts: dict[str, int] = {}

    def count(self, key: str, window: int, cost: int) -> int:
        with self._lock:
            if window > self._window:  # keys name their window: a late caller of the last one just counts
                self._window = window
                self._counts = {}
            self._counts[key] = self._counts.get(key, 0) + cost
            return self._counts[key]


_LOCAL = _LocalWindows()


def hit_address(request: HttpRequest, rate_class: str) -> None:
    """``hit`` for a caller known only by address (``brain.client_ip.client_network``: an IPv6
    /64 is one address): what anyone may ask without a credential and costs work to answer."""
    from brain.client_ip import client_network

    hit(principal_key=f"ip:{client_network(request)}", rate_class=rate_class)


def sign_in_limited(request: HttpRequest) -> HttpResponse | None:
    """The 429 answer when ``request`` is a sign-in attempt (a POST) over its address's cap
    (class ``signin``, ``brain.client_ip.client_network``); otherwise None, the attempt counted.

    Every attempt runs the password hasher (PBKDF2, ~0.4 s of CPU here) — for an unknown
    username too, so that timing tells nothing — and django-axes pauses one *username* from
    an address: a stream of attempts under ever-new names was never paused and kept every
    web worker hashing.
    """
    if request.method != "POST":
        return None
    try:
        hit_address(request, "signin")
    except RateLimited as limited:
        message = "Too many sign-in attempts from your address; try again in {seconds} seconds."
        return throttled(request, limited, message)
    return None


def throttled(request: HttpRequest, limited: RateLimited, message: str, *, api: bool = False) -> HttpResponse:
    """The 429 answer: ``message`` (``{seconds}`` filled in) with ``Retry-After``.

    ``api``: always the JSON error (token APIs, capsules included); otherwise the client's
    format (``brain.errors.error_response``). MCP answers in JSON-RPC instead (``mcp_api.views``).
    """
    from brain.errors import error_response, json_error

    text = message.format(seconds=limited.retry_after)
    response = json_error("rate_limited", text, 429) if api else error_response(request, 429, "rate_limited", text)
    response["Retry-After"] = str(limited.retry_after)
    return response
