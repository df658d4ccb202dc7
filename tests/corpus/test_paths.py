"""Canonical paths: a table of non-canonical paths, each refused with its rule named."""

from __future__ import annotations

import pytest

from brain.text.paths import PathError, validate_page_path, validate_scope_path

REFUSED = [
    # (path, rule)
    ("Topics/pricing.md", "uppercase"),
    ("topics/Pricing.md", "uppercase"),
    ("topics/pricing.MD", "uppercase"),
    ("TOPICS.md", "uppercase"),
    ("topics/pric\u0456ng.md", "non_ascii"),  # Cyrillic i homoglyph
    ("t\u043epics/a.md", "non_ascii"),  # Cyrillic o
    ("topics/caf\u00e9.md", "non_ascii"),
    ("topics/\uff41.md", "non_ascii"),  # full-width a
    ("topics/\u65e5\u672c.md", "non_ascii"),
    ("topics/a\u200b.md", "invisible"),  # zero-width space
    ("topics/\u200da.md", "invisible"),  # zero-width joiner
    ("topics/\ufeffa.md", "invisible"),  # BOM
    ("topics/a\u202e.md", "invisible"),  # right-to-left override
    ("topics/\u2066a.md", "invisible"),  # isolate
    ("topics/\u200fa.md", "invisible"),  # RTL mark
    ("topics/a b.md", "whitespace"),
    ("topics/a\tb.md", "whitespace"),
    (" topics/a.md", "whitespace"),
    ("topics/a.md\n", "whitespace"),
    ("topics/a\x00.md", "nul"),
    ("topics\\pricing.md", "backslash"),
    ("topics/..\\a.md", "backslash"),
    ("topics//pricing.md", "empty_segment"),
    ("topics///a.md", "empty_segment"),
    ("/topics/a.md", "leading_slash"),
    ("//topics/a.md", "leading_slash"),
    ("topics/a.md/", "trailing_slash"),
    ("topics/", "trailing_slash"),
    ("topics/./a.md", "dot_segment"),
    ("topics/../a.md", "dot_segment"),
    ("../a.md", "dot_segment"),
    ("./a.md", "dot_segment"),
    ("topics/.hidden.md", "hidden_segment"),
    (".git/config.md", "hidden_segment"),
    ("topics/.well-known/a.md", "hidden_segment"),
    ("topics/%2e%2e/a.md", "percent_encoding"),
    ("topics/a%20b.md", "percent_encoding"),
    ("topics%2fa.md", "percent_encoding"),
    ("https://evil.example/a.md", "scheme"),
    ("file:/etc/passwd.md", "scheme"),
    ("javascript:alert.md", "scheme"),
    ("topics/a+b.md", "character"),
    ("topics/a~b.md", "character"),
    ("topics/a:b.md", "character"),
    ("topics/pricing", "extension"),
    ("topics/pricing.txt", "extension"),
    ("topics/pricing.md.bak", "extension"),
    ("topics/a.md/b.md", "folder_extension"),  # a.md would be a page and a folder
    ("a.md/b/c.md", "folder_extension"),
    ("", "empty"),
    ("a/" * 127 + "b.md", "too_long"),
]

ACCEPTED = [
    "topics/pricing/discount-policy.md",
    "a.md",
    "people/jane_doe.md",
    "engineering/2026/q3-review.md",
    "x/y.z/v1.2.md",
    "0/1/2.md",
    "-dash.md",
    "_under/score.md",
]


def test_table_has_every_class() -> None:
    assert len(REFUSED) >= 40


@pytest.mark.parametrize(("path", "rule"), REFUSED)
def test_non_canonical_page_paths_are_refused_with_the_rule(path: str, rule: str) -> None:
    with pytest.raises(PathError) as refusal:
        validate_page_path(path)
    assert refusal.value.rule == rule
    assert refusal.value.message
    # The refusal never repairs: nothing normalised is handed back.


@pytest.mark.parametrize("path", ACCEPTED)
def test_canonical_page_paths_are_accepted_unchanged(path: str) -> None:
    assert validate_page_path(path) == path


@pytest.mark.parametrize(
    "scope", ["", "topics/", "topics/pricing/", "topics/pricing/discount-policy.md", "captures/gdrive/x"]
)
def test_grant_scopes(scope: str) -> None:
    assert validate_scope_path(scope) == scope


@pytest.mark.parametrize(
    ("scope", "rule"),
    [
        ("Topics/", "uppercase"),
        ("/topics/", "leading_slash"),
        ("topics//", "empty_segment"),
        ("topics/../", "dot_segment"),
    ],
)
def test_bad_grant_scopes(scope: str, rule: str) -> None:
    with pytest.raises(PathError) as refusal:
        validate_scope_path(scope)
    assert refusal.value.rule == rule
