"""Every typed variable the settings read refuses a malformed value at start, naming it.

The variables are found by reading the settings module's source — every ``env_int``,
``env_float``, ``env_bool``, ``env_choice``, ``env_url`` and ``env_int_map`` call with a
literal name — so a variable added tomorrow is covered the day it is added. And no raw
string read by ``env_str`` / ``env_secret`` is turned into a number by hand: that is how a
malformed value became an unnamed ``ValueError`` traceback.
"""

from __future__ import annotations

import ast
import os
import re
import runpy
from pathlib import Path

import pytest

from brain.env import ConfigurationError
from brain.launcher import PROJECT_ROOT

SETTINGS = PROJECT_ROOT / "brain" / "settings.py"
# A value each typed reader must refuse (none of them is a valid value of any variable).
MALFORMED = {
    "env_int": ["twelve", "1.5"],
    "env_float": ["heavy", "nan", "inf"],
    "env_bool": ["maybe"],
    "env_choice": ["no-such-choice"],
    "env_url": ["not a url", "https:///no-host"],
    "env_int_map": ["policy:soon", "policy"],
}


def typed_variables(path: Path, *, typed_only: bool = True) -> list[tuple[str, str]]:
    """(reader, variable) for every reader called with a literal name in ``path``: the typed
    readers, or every ``env_*`` reader (strings and secrets too) with ``typed_only=False``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (node.func.id in MALFORMED if typed_only else node.func.id.startswith("env_"))
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add((node.func.id, node.args[0].value))
    return sorted(found)


# Single sign-on's variables are read only when a client id is set.
OIDC = {
    "BRAIN_OIDC_CLIENT_ID": "brain",
    "BRAIN_OIDC_CLIENT_SECRET": "s" * 20,
    **{
        f"BRAIN_OIDC_{part}": f"https://id.example/{part.lower()}"
        for part in ("AUTHORIZATION_ENDPOINT", "TOKEN_ENDPOINT", "USERINFO_ENDPOINT", "JWKS_ENDPOINT", "ISSUER")
    },
}
CASES = [(reader, name, value) for reader, name in typed_variables(SETTINGS) for value in MALFORMED[reader]]


def test_the_settings_read_many_typed_variables() -> None:
    # The enumeration itself must not silently find nothing (a renamed reader would).
    readers = {reader for reader, _, _ in CASES}
    assert {"env_int", "env_float", "env_bool", "env_choice", "env_url", "env_int_map"} <= readers
    assert len({name for _, name, _ in CASES}) >= 50


@pytest.mark.parametrize(("reader", "name", "value"), CASES, ids=[f"{name}={value}" for _, name, value in CASES])
def test_a_malformed_value_stops_the_start_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, reader: str, name: str, value: str
) -> None:
    # The branch a variable is read in must be taken: the features that gate reading are on.
    for variable, setting in OIDC.items():
        monkeypatch.setenv(variable, setting)
    monkeypatch.setenv("BRAIN_S3_BUCKET", "brain-media")
    monkeypatch.setenv(name, value)
    before = dict(os.environ)
    with pytest.raises(ConfigurationError) as refused:
        runpy.run_path(str(SETTINGS), run_name="brain_settings_probe")
    assert dict(os.environ) == before  # the probe never starts servers or exports anything
    assert name in str(refused.value)
    assert value not in str(refused.value).replace(name, "")


def _reads_raw(node: ast.AST) -> bool:
    return any(
        isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in {"env_str", "env_secret"}
        for inner in ast.walk(node)
    )


def test_no_raw_variable_is_parsed_by_hand() -> None:
    """``int(env_str(...))`` loses the variable's name from the error; ``env_str(...) in ("1",
    "true")`` silently reads "yes" as off. Typed readers do both jobs with a named error."""
    offenders = []
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        converted = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"int", "float"}
        compared = isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.In, ast.NotIn, ast.Eq, ast.NotEq)) for op in node.ops
        )
        if (converted or compared) and _reads_raw(node):
            offenders.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert not offenders, offenders


def readme_documents(name: str, readme: str) -> bool:
    """The README's configuration table names the variable, in full or as a ``_SUFFIX``
    abbreviation after a variable sharing its prefix on the same row (`BRAIN_EMAIL_HOST` / `_PORT`)."""
    if f"`{name}`" in readme:
        return True
    for row in readme.splitlines():
        if not row.startswith("| `"):
            continue
        for full in re.findall(r"`([A-Z][A-Z0-9_]+)`", row):
            parts = full.split("_")
            for cut in range(1, len(parts)):
                prefix = "_".join(parts[:cut])
                if name.startswith(prefix + "_") and f"`_{name[len(prefix) + 1 :]}`" in row:
                    return True
    return False


def test_every_variable_the_settings_read_is_in_the_readme() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    names = {name for _, name in typed_variables(SETTINGS, typed_only=False)}
    missing = sorted(name for name in names if not readme_documents(name, readme))
    assert not missing, f"add these to the README's configuration table: {missing}"


def test_an_https_brain_sends_hsts_and_secure_cookies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAIN_BASE_URL", "https://brain.example.org")
    settings = runpy.run_path(str(SETTINGS), run_name="brain_settings_probe")
    assert settings["SECURE_HSTS_SECONDS"] == 31_536_000
    assert settings["SESSION_COOKIE_SECURE"]
    assert settings["CSRF_COOKIE_SECURE"]
    monkeypatch.setenv("BRAIN_HSTS_SECONDS", "0")
    assert runpy.run_path(str(SETTINGS), run_name="brain_settings_probe")["SECURE_HSTS_SECONDS"] == 0
    monkeypatch.setenv("BRAIN_BASE_URL", "http://127.0.0.1:8000")
    assert "SECURE_HSTS_SECONDS" not in runpy.run_path(str(SETTINGS), run_name="brain_settings_probe")
