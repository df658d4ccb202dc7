"""Typed readers for environment variables.

Every setting of the project comes from the environment through these helpers, so a
missing or malformed value fails at start with a message that names the variable
(never its value: it may be a secret).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from urllib.parse import urlsplit


class ConfigurationError(RuntimeError):
    """A configuration variable is missing or malformed; the message names it."""


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str | None = None) -> str | None:
    """The variable as a string, or ``default`` when it is unset or blank."""
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool = False) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); anything else is an error."""
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigurationError(f"{name} must be a boolean (1/0, true/false, yes/no, on/off)")


def _within(name: str, number: float, minimum: float | None, maximum: float | None) -> None:
    """Raise naming ``name`` when ``number`` is outside the bounds that are given."""

    def shown(bound: float) -> str:
        return f"{bound:g}" if isinstance(bound, float) else str(bound)

    if minimum is not None and number < minimum:
        raise ConfigurationError(f"{name} must be at least {shown(minimum)}")
    if maximum is not None and number > maximum:
        raise ConfigurationError(f"{name} must be at most {shown(maximum)}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """A decimal integer within ``[minimum, maximum]`` when those are given."""
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer") from None
    _within(name, number, minimum, maximum)
    return number


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    """A finite decimal number within ``[minimum, maximum]`` when those are given.

    ``nan`` and ``inf`` parse as floats but are refused: a weight or a threshold that is not
    a number would silently turn every comparison it enters false.
    """
    value = _raw(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number") from None
    if not math.isfinite(number):
        raise ConfigurationError(f"{name} must be a finite number")
    _within(name, number, minimum, maximum)
    return number


def env_int_map(name: str, default: dict[str, int], *, minimum: int | None = None) -> dict[str, int]:
    """``key:number,key:number`` over ``default`` (a key given replaces its default).

    A blank item is skipped; an item without a key, a colon or a decimal integer is an error
    rather than ignored, so a typo never silently keeps the default.
    """
    value = _raw(name)
    merged = dict(default)
    if value is None:
        return merged
    for item in value.split(","):
        if not item.strip():
            continue
        key, colon, number = (part.strip() for part in item.partition(":"))
        if not key or not colon:
            raise ConfigurationError(f"{name} must be a comma-separated list of name:number")
        try:
            merged[key] = int(number)
        except ValueError:
            raise ConfigurationError(f"{name} must be a comma-separated list of name:number") from None
        if minimum is not None and merged[key] < minimum:
            raise ConfigurationError(f"{name} numbers must be at least {minimum}")
    return merged


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices`` (case-sensitive)."""
    value = _raw(name)
    if value is None:
        return default
    if value not in choices:
        raise ConfigurationError(f"{name} must be one of: {', '.join(choices)}")
    return value


def env_url(name: str, *, schemes: tuple[str, ...], default: str | None = None) -> str | None:
    """A URL whose scheme is one of ``schemes`` and which names a host (or, other than http(s), a socket path)."""
    value = _raw(name)
    if value is None:
        return default
    try:
        parts = urlsplit(value)
    except ValueError:
        raise ConfigurationError(f"{name} is not a valid URL") from None
    if parts.scheme not in schemes:
        raise ConfigurationError(f"{name} must be a URL with scheme {' or '.join(schemes)}")
    if not parts.netloc and not parts.path:
        raise ConfigurationError(f"{name} must name a host")
    if parts.scheme in ("http", "https") and not parts.hostname:
        # "https:issuer" or "https:///x" parse, but name no server to call.
        raise ConfigurationError(f"{name} must name a host")
    return value


def env_secret(name: str, default: str | None = None) -> str | None:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (Docker/K8s secrets).

    Setting both is refused: it is ambiguous which one the operator meant.
    """
    direct = _raw(name)
    file_name = _raw(f"{name}_FILE")
    if direct is not None and file_name is not None:
        raise ConfigurationError(f"set only one of {name} and {name}_FILE")
    if file_name is not None:
        try:
            content = Path(file_name).read_text(encoding="utf-8").strip()
        except OSError:
            raise ConfigurationError(f"{name}_FILE names a file that cannot be read") from None
        if not content:
            raise ConfigurationError(f"{name}_FILE names an empty file")
        return content
    return default if direct is None else direct
