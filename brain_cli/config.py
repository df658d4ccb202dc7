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


class ConfigInvalid(Exception):
    """The saved file or the environment says something the CLI cannot use (one line, no traceback)."""


def load() -> Settings | None:
    """The saved settings with environment overrides, or None when neither says where to go.

    The saved token goes only to the saved URL: ``BRAIN_URL`` alone (another server) needs its
    own ``BRAIN_TOKEN``, or a personal token would be sent to whatever the variable names.
    Raises ``ConfigInvalid`` for a file that is not ``{"url": …, "token": …}`` or a token
    that is not printable ASCII (an HTTP header cannot carry it).
    """
    saved: dict[str, str] = {}
    path = config_path()
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = {}
        if not isinstance(loaded, dict) or not all(isinstance(loaded.get(key, ""), str) for key in ("url", "token")):
            raise ConfigInvalid(f"{path} is not a Brain CLI config (url and token, as text): run `brain setup` again")
        saved = loaded
    # Stripped, as `brain setup` strips them: a space pasted with the token read as a network
    # failure (an HTTP client refuses the header) instead of the token it is.
    env_url, env_token = os.environ.get("BRAIN_URL", "").strip(), os.environ.get("BRAIN_TOKEN", "").strip()
    url = env_url or saved.get("url") or ""
    token = env_token or (saved.get("token") or "" if not env_url or _same(env_url, saved.get("url", "")) else "")
    if token and not (token.isascii() and token.isprintable()):
        raise ConfigInvalid("the token holds characters a token never has: copy it again from your Brain")
    problem = url_problem(url) if url else None
    if problem is not None:
        raise ConfigInvalid(("BRAIN_URL: " if env_url else f"{path}: ") + problem)
    return Settings(url=url.rstrip("/"), token=token) if url and token else None


def url_problem(url: str) -> str | None:
    """Why ``url`` is no address to save or call, or None: a user name or password in it would
    be printed in every message naming the server (the token is what signs you in)."""
    # Read by hand, not by urlsplit: a malformed address ("http://u:pw@[::1") makes it raise,
    # and is left to fail as unreachable; its user info must not be printed either.
    # "admin:pw@host" (no scheme) is read so too: it reaches the messages just the same.
    rest = url.partition("://")[2] if "://" in url else url
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in authority:
        return "the URL holds a user name or password: give Brain's address alone (your token signs you in)"
    return None


def _same(one: str, other: str) -> bool:
    return one.rstrip("/") == other.rstrip("/")


def save(settings: Settings) -> Path:
    """Write the settings readable by the user only (created 0600, never widened)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"url": settings.url, "token": settings.token}, handle)
    path.chmod(0o600)
    return path
