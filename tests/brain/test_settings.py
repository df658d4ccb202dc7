"""Bad configuration fails at start with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from brain import env
from brain.launcher import PROJECT_ROOT


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BRAIN_PORT", "eighty"),
        ("BRAIN_PORT", "70000"),
        ("BRAIN_DEBUG", "maybe"),
        ("BRAIN_BASE_URL", "ftp://brain.example"),
        ("BRAIN_BASE_URL", "https://brain.example/some/path"),
        ("DATABASE_URL", "mysql://db/brain"),
        ("REDIS_URL", "memcached://localhost"),
        ("BRAIN_EMBEDDINGS_PROVIDER", "magic"),
    ],
)
def test_malformed_variable_is_named_at_start(name: str, value: str) -> None:
    environment = {**os.environ, "BRAIN_SECRET_KEY": "k" * 40, name: value, "DJANGO_SETTINGS_MODULE": "brain.settings"}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=environment,
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=60,
    )
    assert result.returncode != 0
    assert name in result.stderr
    assert "ConfigurationError" in result.stderr
    assert value not in result.stderr.split("ConfigurationError")[-1]


def test_secret_key_required_with_external_database() -> None:
    environment = {k: v for k, v in os.environ.items() if k not in {"BRAIN_SECRET_KEY", "BRAIN_EMBEDDED_SERVICES"}}
    environment.update({"DATABASE_URL": "postgresql://u@127.0.0.1:1/x", "REDIS_URL": "redis://127.0.0.1:1/0"})
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={**environment, "DJANGO_SETTINGS_MODULE": "brain.settings"},
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=60,
    )
    assert result.returncode != 0
    assert "BRAIN_SECRET_KEY is required" in result.stderr


def test_env_helpers(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("X_INT", " 12 ")
    assert env.env_int("X_INT", 1) == 12
    monkeypatch.setenv("X_BOOL", "Yes")
    assert env.env_bool("X_BOOL") is True
    monkeypatch.delenv("X_MISSING", raising=False)
    assert env.env_str("X_MISSING", "d") == "d"
    secret_file = tmp_path / "s"
    secret_file.write_text("from-file\n")
    monkeypatch.setenv("X_SECRET_FILE", str(secret_file))
    assert env.env_secret("X_SECRET") == "from-file"
    monkeypatch.setenv("X_SECRET", "direct")
    with pytest.raises(env.ConfigurationError, match="only one of X_SECRET and X_SECRET_FILE"):
        env.env_secret("X_SECRET")


def test_numbers_and_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_FLOAT", " 0.25 ")
    assert env.env_float("X_FLOAT", 1.0, minimum=0, maximum=1) == 0.25
    monkeypatch.setenv("X_FLOAT", "1.5")
    with pytest.raises(env.ConfigurationError, match=r"X_FLOAT must be at most 1$"):
        env.env_float("X_FLOAT", 1.0, minimum=0, maximum=1)
    monkeypatch.setenv("X_FLOAT", "-inf")
    with pytest.raises(env.ConfigurationError, match="X_FLOAT must be a finite number"):
        env.env_float("X_FLOAT", 1.0)
    monkeypatch.setenv("X_MAP", "policy: 30, ,topic:365")
    assert env.env_int_map("X_MAP", {"default": 180, "policy": 90}, minimum=1) == {
        "default": 180,
        "policy": 30,
        "topic": 365,
    }
    monkeypatch.setenv("X_MAP", "policy:0")
    with pytest.raises(env.ConfigurationError, match="X_MAP numbers must be at least 1"):
        env.env_int_map("X_MAP", {}, minimum=1)
