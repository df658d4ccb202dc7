"""Test settings: the real settings with test-speed overrides only."""

from __future__ import annotations

import uuid

from brain.settings import *  # noqa: F403
from brain.settings import ALLOWED_HOSTS, CACHES, CELERY_BROKER_URL, DATABASES

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests share the embedded Redis with `make run`; keep their cache keys apart, and apart
# from the previous run's (rate-limit windows outlive a fast re-run).
CACHES["default"]["KEY_PREFIX"] = f"brain-test-{uuid.uuid4().hex[:12]}"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]
# Tests use their own Redis database for the broker, apart from a running `make run`.
CELERY_BROKER_URL = CELERY_BROKER_URL.rsplit("/", 1)[0] + "/15"
# Live-server threads must not keep connections open past a test (the test database is
# dropped at the end of the run).
DATABASES["default"]["CONN_MAX_AGE"] = 0
# Every test client is 127.0.0.1: the per-address caps on tokens and sign-ins have their own tests.
BRAIN_MCP_RATE_LIMITS = {**BRAIN_MCP_RATE_LIMITS, "token": 100_000, "signin": 100_000}  # noqa: F405
