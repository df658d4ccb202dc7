"""The grants admin at scale: lists whose queries do not grow with their rows, an audit log
that never counts, sorts or de-duplicates the whole (append-only, ever-growing) table, and
member pickers that do not list every member."""

from __future__ import annotations

import re
from typing import Any
from unittest import mock

from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from grants.models import AuditEvent, Group, GroupMembership, Member
from grants.principals import SYSTEM
from grants.services import grant_issue, group_add_member, group_create, member_create, service_account_create
from tests.base import BrainTestCase

AUDIT = "/admin/grants/auditevent/"


def get_with_queries(client: Any, url: str, params: dict[str, Any] | None = None) -> tuple[Any, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params or {})
    assert response.status_code == 200, response.content.decode()[:2000]
    return response, [query["sql"] for query in captured.captured_queries]


def shows_count(html: str, count: int) -> bool:
    """Whether the list says it holds ``count`` audit events."""
    noun = "audit event" if count == 1 else "audit events"
    return re.search(rf"(?<![\d,]){count} {noun}(?!s)", html) is not None


def options(html: str, name: str) -> list[str]:
    """The <option> values rendered inside the <select name=...>."""
    select = re.search(rf'<select[^>]*name="{name}"[^>]*>(.*?)</select>', html, re.S)
    assert select is not None, f"no select named {name}"
    return re.findall(r'<option value="([^"]*)"', select.group(1))


class GrantChangelistTests(BrainTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)
        self.made = 0

    def add_grants(self, n: int) -> None:
        """``n`` grants of each subject kind, issued by an administrator (so ``created_by`` is set)."""
        for _ in range(n):
            self.made += 1
            person = member_create(actor=SYSTEM, username=f"person{self.made}")
            team = group_create(actor=SYSTEM, name=f"team{self.made}")
            bot = service_account_create(actor=SYSTEM, name=f"bot{self.made}")
            grant_issue(actor=self.charlie, member=person, path="topics/", permission="read")
            grant_issue(actor=self.charlie, group=team, path="topics/", permission="read")
            grant_issue(actor=self.charlie, service_account=bot, category="pricing", permission="read")

    def test_the_grant_list_runs_the_same_queries_for_few_or_many_grants(self) -> None:
        self.add_grants(2)
        _, few = get_with_queries(self.client, "/admin/grants/grant/")
        self.add_grants(6)
        response, many = get_with_queries(self.client, "/admin/grants/grant/")
        body = response.content.decode()
        for label in ("member:person8", "group:team8", "service:bot8", "charlie"):
            assert label in body, label
        assert len(many) == len(few), "\n".join(many)


class AuditLogTests(BrainTestCase):
    """The audit log's list: paged without counting the unfiltered table, filtered by fixed
    choices (no SELECT DISTINCT), searched by whole values."""

    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)
        AuditEvent.objects.create(actor_kind="member", actor_id=self.alice.pk, actor_label="alice",
                                  action="grant.issue", target_type="grant", target="grant-kestrel-17",
                                  request_id="6f1d0c2e-0000-4000-8000-00000000abcd")  # fmt: skip
        AuditEvent.objects.create(actor_kind="service", actor_id=7, actor_label="docs-bot", action="build.open",
                                  target_type="build", target="topics/pricing/plans.md")  # fmt: skip
        AuditEvent.objects.create(actor_kind="system", actor_label="system", action="member.create",
                                  target_type="member", target="erik")  # fmt: skip

    def listed(self, params: dict[str, Any] | None = None) -> tuple[str, list[str]]:
        response, queries = get_with_queries(self.client, AUDIT, params)
        for sql in queries:
            assert "DISTINCT" not in sql.upper(), sql
        return response.content.decode(), queries

    @staticmethod
    def audit_counts(queries: list[str]) -> list[str]:
        return [sql for sql in queries if "COUNT(" in sql.upper() and "grants_auditevent" in sql]

    def test_the_unfiltered_list_never_counts_the_whole_table(self) -> None:
        body, queries = self.listed()
        assert "docs-bot" in body
        for sql in self.audit_counts(queries):
            # At most a count that stops early (a small or never-analysed table).
            assert re.search(r"LIMIT \d+", sql), sql
        assert len(self.audit_counts(queries)) <= 1

    def test_a_large_table_shows_the_planners_estimate_and_counts_nothing(self) -> None:
        from grants.admin import EstimatedCountPaginator

        for number in range(12):
            AuditEvent.objects.create(actor_kind="system", actor_label="system", action="session.end",
                                      target_type="user", target=str(number))  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE grants_auditevent")
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'grants_auditevent'::regclass")
            estimate = cursor.fetchone()[0]
        assert estimate >= 12
        with mock.patch.object(EstimatedCountPaginator, "exact_up_to", 5):
            body, queries = self.listed()
        assert self.audit_counts(queries) == [], queries
        assert shows_count(body, estimate)
        # A filtered list is counted exactly (the filter narrows it).
        with mock.patch.object(EstimatedCountPaginator, "exact_up_to", 5):
            body, _ = self.listed({"actor_kind": "service"})
        assert shows_count(body, 1)

    def test_filters_offer_fixed_choices_and_filter(self) -> None:
        body, _ = self.listed()
        for choice in ("?actor_kind=service", "?action_family=grant", "?target_type=build", "created_at__gte="):
            assert choice in body, choice
        body, _ = self.listed({"actor_kind": "service"})
        assert "docs-bot" in body
        assert "erik" not in body
        body, _ = self.listed({"action_family": "grant"})
        assert "grant-kestrel-17" in body
        assert "docs-bot" not in body
        body, _ = self.listed({"target_type": "member"})
        assert "erik" in body
        assert "grant-kestrel-17" not in body

    def test_search_matches_a_whole_action_target_actor_or_request_id(self) -> None:
        for term, expected in (
            ("grant.issue", "grant-kestrel-17"),
            ("grant-kestrel-17", "grant.issue"),
            ("topics/pricing/plans.md", "docs-bot"),
            ("docs-bot", "build.open"),
            ("6f1d0c2e-0000-4000-8000-00000000abcd", "grant-kestrel-17"),
        ):
            body, queries = self.listed({"q": term})
            assert expected in body, term
            matching = AuditEvent.objects.filter(
                Q(action=term) | Q(target=term) | Q(actor_label=term) | Q(request_id=term)
            ).count()
            assert matching >= 1
            assert shows_count(body, matching), term
            for sql in queries:
                if "grants_auditevent" in sql:
                    assert "LIKE" not in sql.upper(), sql
                    assert "UPPER(" not in sql.upper(), sql
        # A part of a value is not searched (that read every row of the table).
        body, _ = self.listed({"q": "grant"})
        assert shows_count(body, 0)

    def test_only_the_time_column_sorts(self) -> None:
        """Sorting by another column sorted the whole table on every page."""
        body, _ = self.listed()
        assert 'class="sortable' in body
        assert body.count('class="sortable') == 1


class GroupFormTests(BrainTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)
        for number in range(25):
            member_create(actor=SYSTEM, username=f"extra{number}")

    def test_the_group_form_lists_no_members_it_is_not_showing(self) -> None:
        add = self.client.get("/admin/grants/group/add/").content.decode()
        assert options(add, "people") == []
        assert 'data-field-name="member"' in add
        assert "admin-autocomplete" in add
        team = group_create(actor=SYSTEM, name="team")
        group_add_member(actor=SYSTEM, group=team, member=self.bob)
        change = self.client.get(f"/admin/grants/group/{team.pk}/change/").content.decode()
        assert options(change, "people") == [str(self.bob.pk)]
        assert "autocomplete.js" in change  # the widget's script is on the page

    def test_the_member_search_behind_the_group_form_answers(self) -> None:
        found = self.client.get(
            "/admin/autocomplete/",
            {"app_label": "grants", "model_name": "groupmembership", "field_name": "member", "term": "extra1"},
        )
        assert found.status_code == 200
        names = {item["text"] for item in found.json()["results"]}
        assert "extra1" in names
        assert "extra12" in names
        assert "bob" not in names

    def test_the_group_form_still_saves_members_and_refuses_bad_ones(self) -> None:
        saved = self.client.post(
            "/admin/grants/group/add/", {"name": "sales", "description": "", "people": [self.alice.pk, self.bob.pk]}
        )
        assert saved.status_code == 302, saved.content.decode()[:2000]
        group = Group.objects.get(name="sales")
        assert set(GroupMembership.objects.filter(group=group).values_list("member", flat=True)) == {
            self.alice.pk,
            self.bob.pk,
        }
        for bad in ("abc", "999999"):
            refused = self.client.post("/admin/grants/group/add/", {"name": "ops", "description": "", "people": [bad]})
            assert refused.status_code == 200
            assert "errorlist" in refused.content.decode()
        assert not Group.objects.filter(name="ops").exists()
        assert Member.objects.count() == 28
        # A name out of form is said as the rule, not as the database constraint's name.
        for url in ("/admin/grants/group/add/", "/admin/grants/serviceaccount/add/"):
            bad_name = self.client.post(url, {"name": "Sales Team", "description": "", "is_active": "on"})
            assert bad_name.status_code == 200
            body = bad_name.content.decode()
            assert "name is 1-64 characters of a-z, 0-9" in body, url
            assert "Constraint" not in body
