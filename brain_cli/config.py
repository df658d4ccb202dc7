"""Where the CLI keeps the server URL and personal token: one JSON file, mode 0600.

The file lives in the user's config directory (``click.get_app_dir``: ``~/.config/brain``
on Linux), or in ``BRAIN_CONFIG_DIR``. ``BRAIN_URL`` and ``BRAIN_TOKEN`` override it (for
scripts and CI, where nothing should be written).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import click


@dataclass(frozen=True)
class Settings:
    url: str
    token: str


def config_path() -> Path:
    base = os.environ.get("BRAIN_CONFIG_DIR") or click.get_app_dir("brain")
    return Path(base) / "config.json"


def load() -> Settings | None:
    """The saved settings with environment overrides, or None when neither says where to go."""
    saved: dict[str, str] = {}
    path = config_path()
    if path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = {}
    url = os.environ.get("BRAIN_URL") or saved.get("url") or ""
    token = os.environ.get("BRAIN_TOKEN") or saved.get("token") or ""
    return Settings(url=url.rstrip("/"), token=token) if url and token else None


def save(settings: Settings) -> Path:
    """Write the settings readable by the user only (created 0600, never widened)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"url": settings.url, "token": settings.token}, handle)
    path.chmod(0o600)
    return path
