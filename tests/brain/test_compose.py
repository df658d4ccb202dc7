"""docker-compose.yml has the production shape (no Docker engine here, so we parse it)."""

from __future__ import annotations

import yaml

from brain.launcher import PROJECT_ROOT


def test_compose_services_and_wiring() -> None:
    compose = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    assert "pgvector" in services["postgres"]["image"]
    assert services["redis"]["image"].startswith("redis:")
    for name in ("web", "worker", "beat"):
        environment = services[name]["environment"]
        assert "@postgres:5432/" in environment["DATABASE_URL"]
        assert environment["REDIS_URL"].startswith("redis://redis:")
        assert "BRAIN_SECRET_KEY" in environment
    assert "gunicorn" in services["web"]["command"]
    assert "worker" in services["worker"]["command"]
    assert "beat" in services["beat"]["command"]


def test_every_documented_variable_is_in_env_example() -> None:
    example = (PROJECT_ROOT / ".env.example").read_text()
    readme = (PROJECT_ROOT / "README.md").read_text()
    for name in (
        "DATABASE_URL",
        "REDIS_URL",
        "BRAIN_SECRET_KEY",
        "BRAIN_BASE_URL",
        "BRAIN_PORT",
        "BRAIN_EMBEDDINGS_PROVIDER",
        "LLM_BASE_URL",
        "LLM_API_KEY",
        "LLM_MODEL",
        "BRAIN_S3_BUCKET",
    ):
        assert name in example, name
        assert name in readme, name
