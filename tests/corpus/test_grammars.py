"""The path and key grammars: the Python validators and the database CHECKs accept the same strings.

Each grammar is written twice — a validator that names the rule a value breaks, and a CHECK
constraint that holds even for a write that skips the validator. Hypothesis drives both with
the same strings; any disagreement is either a 500 (Python accepts, the database refuses) or a
hole (the database would store what the API refuses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, connection, transaction
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from brain.text.paths import PathError, validate_category, validate_page_path
from corpus.figures import figure_check
from corpus.frontmatter import RESERVED_SOURCE_ENDINGS, validate_source_id
from grants.principals import SYSTEM
from grants.services import member_create
from tests.base import capture, publish

ALPHABET = "abz09._-/AZ \n\t\x00é\u200b:"
SEGMENT = st.text(alphabet="abz09._-", min_size=1, max_size=12)
PATHISH = st.one_of(
    st.text(alphabet=ALPHABET, max_size=40),
    st.lists(SEGMENT, min_size=1, max_size=4).map("/".join),
    st.lists(SEGMENT, min_size=1, max_size=4).map(lambda parts: "/".join(parts) + ".md"),
    st.lists(SEGMENT, min_size=1, max_size=4).map(lambda parts: "/".join(parts) + ".md\n"),
    st.integers(240, 270).map(lambda n: "a" * (n - 3) + ".md"),
)


def _accepts(validate: Callable[[Any], Any]) -> Callable[[str], bool]:
    def accepted(value: str) -> bool:
        try:
            validate(value)
        except (PathError, ValueError, ValidationError):  # each validator's own refusal
            return False
        return True

    return accepted


def _figure_key_ok(key: str) -> bool:
    return _accepts(lambda value: figure_check(actor=SYSTEM, page_path="topics/a.md", key=value, value=1))(key)


class GrammarAgreementTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        member_create(actor=SYSTEM, username="alice")
        cls.page = publish("topics/a.md", title="A")
        cls.source = capture("notes/a")

    def _database_accepts(self, sql: str, *params: str | int) -> bool:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, list(params))
                transaction.set_rollback(True)
        except (IntegrityError, DataError):
            return False
        return True

    @settings(max_examples=200, deadline=None)
    @given(PATHISH)
    def test_page_paths(self, path: str) -> None:
        in_db = self._database_accepts("UPDATE corpus_page SET path = %s WHERE id = %s", path, self.page.pk)
        assert _accepts(validate_page_path)(path) == in_db, path

    @settings(max_examples=200, deadline=None)
    @given(PATHISH.map(lambda value: value.removesuffix(".md").removesuffix(".md\n")))
    def test_capture_keys(self, key: str) -> None:
        in_db = self._database_accepts("UPDATE corpus_source SET key = %s WHERE id = %s", key, self.source.pk)
        # Beyond the grammar the database holds, new keys may not take REST v1's route names.
        reserved = key == "search" or ("/" in key and key.rsplit("/", 1)[-1] in RESERVED_SOURCE_ENDINGS)
        assert _accepts(validate_source_id)(key) == (in_db and not reserved), key

    def test_capture_keys_never_take_a_rest_route_name(self) -> None:
        for key in ("search", "notes/status", "notes/tags"):
            assert not _accepts(validate_source_id)(key), key
        for key in ("status", "notes/status-2026", "a/search"):
            assert _accepts(validate_source_id)(key), key

    @settings(max_examples=150, deadline=None)
    @given(st.one_of(st.text(alphabet=ALPHABET, max_size=70), SEGMENT, SEGMENT.map(lambda s: s + "\n")))
    def test_categories(self, category: str) -> None:
        in_db = self._database_accepts("UPDATE corpus_page SET category = %s WHERE id = %s", category, self.page.pk)
        assert _accepts(validate_category)(category) == in_db, category

    @settings(max_examples=150, deadline=None)
    @given(st.one_of(st.text(alphabet=ALPHABET, max_size=140), SEGMENT, SEGMENT.map(lambda s: s + "\n")))
    def test_figure_keys(self, key: str) -> None:
        in_db = self._database_accepts(
            "INSERT INTO corpus_figure (page_id, key, value, unit, as_of, is_live, created_at) "
            "VALUES (%s, %s, 1, '', now(), false, now())",
            self.page.pk,
            key,
        )
        assert _figure_key_ok(key) == in_db, key
