"""Settings for the throughput benchmark's server: the real settings, the bench URLconf."""

from __future__ import annotations

from brain.settings import *  # noqa: F403

ROOT_URLCONF = "bench.mcp_urls"
