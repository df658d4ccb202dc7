"""docker-compose.yml has the scale-out shape (no Docker engine here, so we parse it):
replicated web and workers, one beat, one PostgreSQL behind PgBouncer, one Redis, the mail
receiver, health checks, shared media, and secrets only from the environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from brain.launcher import PROJECT_ROOT

INFRASTRUCTURE = {"postgres", "pgbouncer", "redis", "proxy"}
APP_SERVICES = {"migrate", "web", "worker", "beat", "mail"}
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, ${NAME?message}
REFERENCE = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
SECRET_NAME = re.compile(r"PASSWORD|SECRET|_KEY|TOKEN")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())
    return loaded


def environment_of(service: dict[str, Any]) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):  # ["NAME=value", …]
        return dict(item.split("=", 1) for item in raw)
    return {str(name): str(value) for name, value in raw.items()}


def replicas(service: dict[str, Any]) -> int:
    return int((service.get("deploy") or {}).get("replicas", 1))


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's variable substitution, for the forms this file uses."""

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        given = variables.get(name)
        if op in (":-", "-"):
            return given if given or (op == "-" and given is not None) else arg
        if op in (":?", "?") and not given:
            raise AssertionError(f"{name} is required: {arg}")
        return given or ""

    return REFERENCE.sub(substitute, value.replace("$$", "\0")).replace("\0", "$")


def test_replicas_one_beat_and_the_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == INFRASTRUCTURE | APP_SERVICES
    assert replicas(services["web"]) >= 2
    assert replicas(services["worker"]) >= 2
    assert replicas(services["beat"]) == 1  # a singleton: two would send every periodic task twice
    assert "pgvector" in services["postgres"]["image"]
    assert services["redis"]["image"].startswith("redis:")
    assert "gunicorn" in services["web"]["command"]
    assert "worker" in services["worker"]["command"]
    assert "beat" in services["beat"]["command"]
    assert "brain_inbound_mail" in services["mail"]["command"]
    # All interfaces inside its container, so the published port reaches it.
    assert services["mail"]["command"][-2:] == ["--host", "0.0.0.0"]  # noqa: S104
    # The receiver is published on loopback only (behind the organisation's MX).
    assert all(str(port).startswith("127.0.0.1:") for port in services["mail"].get("ports", []))
    # Migrations and the capsule trigger check run once, before the long-running processes.
    assert "capsules_check" in " ".join(services["migrate"]["command"])
    assert "livechunks_check --repair" in " ".join(services["migrate"]["command"])
    for name in APP_SERVICES - {"migrate"}:
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully", name


def test_every_app_service_runs_the_same_image_against_the_same_database_and_redis(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    apps = {name: service for name, service in services.items() if service.get("image") == "brain:latest"}
    assert set(apps) == APP_SERVICES
    assert {(service.get("build"), service["image"]) for service in apps.values()} == {(".", "brain:latest")}
    environments = [environment_of(service) for service in apps.values()]
    assert len({env["DATABASE_URL"] for env in environments}) == 1
    assert len({env["REDIS_URL"] for env in environments}) == 1
    assert len({env["BRAIN_SECRET_KEY"] for env in environments}) == 1
    assert len({env["BRAIN_SECRETS_KEYS"] for env in environments}) == 1
    redis_url = urlsplit(environments[0]["REDIS_URL"])
    assert (redis_url.scheme, redis_url.hostname) == ("redis", "redis")
    # Media are shared: one volume for every app service (or object storage, when configured).
    mounts = {tuple(service.get("volumes", [])) for service in apps.values()}
    assert mounts == {("media:/app/var/media",)} or all(env.get("BRAIN_S3_BUCKET") for env in environments)


def test_behind_pgbouncer_in_transaction_mode_prepared_statements_and_cursors_are_off(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    pooler = environment_of(services["pgbouncer"])
    assert pooler["POOL_MODE"] == "transaction"
    assert pooler["DB_HOST"] == "postgres"
    for name in APP_SERVICES:
        env = environment_of(services[name])
        if urlsplit(env["DATABASE_URL"]).hostname == "pgbouncer":
            assert env["BRAIN_DB_PREPARED"] == "0", name
            assert env["BRAIN_DB_SERVER_SIDE_CURSORS"] == "0", name


def test_no_secret_is_written_in_the_file(compose: dict[str, Any]) -> None:
    """Every secret comes from the environment as ${NAME} (required or empty), never a literal."""
    for service_name, service in compose["services"].items():
        for name, value in environment_of(service).items():
            if SECRET_NAME.search(name):
                match = REFERENCE.fullmatch(value)
                assert match is not None, f"{service_name}: {name} is a literal"
                assert match["op"] in (None, ":?", "?") or not match["arg"], f"{service_name}: {name} has a default"
            parts = urlsplit(value)
            if parts.scheme and parts.password is not None:
                assert REFERENCE.fullmatch(parts.password), f"{service_name}: {name} holds a literal password"


def test_health_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    web_check = " ".join(services["web"]["healthcheck"]["test"])
    assert "/healthz" in web_check
    for name in ("postgres", "pgbouncer", "redis", "web", "worker", "mail"):
        assert services[name].get("healthcheck", {}).get("test"), name


def test_the_compose_environment_gives_django_the_pooled_settings(compose: dict[str, Any], tmp_path: Path) -> None:
    """The web service's environment, interpolated as compose would, loads settings that point
    at PgBouncer with prepared statements and server-side cursors off."""
    variables = {
        "POSTGRES_PASSWORD": "compose0test0password",
        "BRAIN_SECRET_KEY": "compose-test-secret-key-0123456789-abcdef",
        "BRAIN_SECRETS_KEYS": "1:" + "A" * 43 + "=",
    }
    web_env = {
        name: interpolate(value, variables) for name, value in environment_of(compose["services"]["web"]).items()
    }
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("BRAIN_") and name not in ("DATABASE_URL", "REDIS_URL")
    }
    environment.update(web_env, DJANGO_SETTINGS_MODULE="brain.settings", BRAIN_VAR_DIR=str(tmp_path))
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; d = s.DATABASES['default'];"
        "print(json.dumps([d['HOST'], d['PORT'], d['CONN_MAX_AGE'], d['DISABLE_SERVER_SIDE_CURSORS'],"
        " d.get('OPTIONS', {}).get('server_side_binding', False), s.BRAIN_TRUSTED_PROXY_COUNT]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    host, port, max_age, no_cursors, binding, proxies = json.loads(result.stdout.strip().splitlines()[-1])
    assert (host, int(port), max_age) == ("pgbouncer", 5432, 60)
    assert no_cursors is True
    assert binding is False
    assert proxies == 1


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
        "BRAIN_DB_PREPARED",
        "BRAIN_DB_SERVER_SIDE_CURSORS",
    ):
        assert name in example, name
        assert name in readme, name


def test_every_variable_the_code_reads_is_in_env_example() -> None:
    """Enumerated from the code (every ``env_*("NAME"…)`` call outside tests and benches): the
    README says .env.example lists them all, and the compose file hands .env to every process."""
    import re

    example = (PROJECT_ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#?([A-Z][A-Z0-9_]+)=", example, flags=re.MULTILINE))
    read: set[str] = set()
    for source in PROJECT_ROOT.rglob("*.py"):
        relative = source.relative_to(PROJECT_ROOT).parts
        if relative[0] in (".venv", "tests", "bench", "var", "node_modules"):
            continue
        read |= set(re.findall(r"\benv_\w+\(\s*\"([A-Z][A-Z0-9_]+)\"", source.read_text(encoding="utf-8")))
    assert len(read) >= 80
    assert sorted(read - listed) == []


def test_the_app_processes_take_every_other_setting_from_env(compose: dict[str, Any]) -> None:
    for name in ("migrate", "web", "worker", "beat", "mail"):
        service = compose["services"][name]
        assert any(entry.get("path") == ".env" for entry in service.get("env_file", [])), name
