"""The grant grammar lives in the database: bad rows inserted with raw SQL are refused."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.utils import DatabaseError

from grants.audit import audit_record
from grants.models import AuditEvent
from grants.principals import SYSTEM
from tests.base import BrainTestCase

BAD_ROWS = [
    # (member, group, service, path, category, permission)
    ("alice", None, None, None, None, 1),  # no scope
    ("alice", None, None, "topics/", "pricing", 1),  # both scopes
    (None, None, None, "topics/", None, 1),  # no subject
    ("alice", "sales", None, "topics/", None, 1),  # two subjects
    ("alice", None, None, "Topics/", None, 1),  # upper case
    ("alice", None, None, "/topics/", None, 1),  # leading slash
    ("alice", None, None, "topics//pricing/", None, 1),  # empty segment
    ("alice", None, None, "topics/../secret/", None, 1),  # dot-dot
    ("alice", None, None, "topics/.hidden/", None, 1),  # hidden segment
    ("alice", None, None, "topics/a b.md", None, 1),  # whitespace
    ("alice", None, None, "topics/caf\u00e9.md", None, 1),  # non-ASCII
    ("alice", None, None, "topics/%2e%2e/", None, 1),  # percent-encoding
    ("alice", None, None, None, "Pricing", 1),  # bad category
    ("alice", None, None, None, "", 1),  # empty category
    ("alice", None, None, "topics/", None, 4),  # unknown permission
    ("alice", None, None, "topics/", None, 0),  # unknown permission
]


class GrantConstraintTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        from grants.models import Group

        cls.group = Group.objects.create(name="sales")

    def _insert(self, member, group, service, path, category, permission) -> None:
        member_id = self.alice.pk if member else None
        group_id = self.group.pk if group else None
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO grants_grant (member_id, group_id, service_account_id, path, category, permission,"
                " created_at) VALUES (%s, %s, %s, %s, %s, %s, now())",
                [member_id, group_id, service, path, category, permission],
            )

    def test_database_refuses_unparsable_grants(self) -> None:
        for row in BAD_ROWS:
            with self.subTest(row=row), pytest.raises(IntegrityError), transaction.atomic():
                self._insert(*row)

    def test_database_accepts_the_grammar(self) -> None:
        for path, category in (("", None), ("topics/", None), ("topics/pricing/a.md", None), (None, "pricing")):
            with self.subTest(path=path, category=category):
                self._insert("alice", None, None, path, category, 2)


class AuditAppendOnlyTests(BrainTestCase):
    def test_update_and_delete_are_refused_by_the_database(self) -> None:
        event = audit_record(actor=SYSTEM, action="test.event", target="x")
        with pytest.raises(DatabaseError), transaction.atomic():
            AuditEvent.objects.filter(pk=event.pk).update(action="tampered")
        with pytest.raises(DatabaseError), transaction.atomic():
            AuditEvent.objects.filter(pk=event.pk).delete()
        assert AuditEvent.objects.get(pk=event.pk).action == "test.event"
