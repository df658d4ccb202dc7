"""Team administration at its edges: races, owners, Slack links, people who leave, audit."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client, TransactionTestCase

from accounts.services import member_offboard, member_suspend, service_account_change
from answers.credentials import question_credential_issue, question_credential_owner
from grants.models import AuditEvent, Group, Member, ServiceAccount
from grants.principals import SYSTEM
from grants.services import group_create, member_create, member_update, service_account_create
from memory.tokens import api_token_issue, api_token_revoke
from tests.base import BrainTestCase


def post_while_another_adds(create: Callable[[], object], url: str, data: dict[str, str]) -> Any:
    """An administrator posts the admin form at ``url`` while another transaction has just run
    ``create`` and not yet committed; the answer the second administrator gets."""
    admin = member_create(actor=SYSTEM, username="adm", email="adm@example.com", role="admin")
    holding, release = threading.Event(), threading.Event()
    answers: list[Any] = []

    def first_admin() -> None:
        try:
            with transaction.atomic():
                create()
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    def second_admin() -> None:
        try:
            client = Client()
            client.force_login(admin.user)
            answers.append(client.post(url, data))
        finally:
            connection.close()

    one = threading.Thread(target=first_admin)
    one.start()
    assert holding.wait(10)
    two = threading.Thread(target=second_admin)
    two.start()
    two.join(1.0)  # it waits for the first one's claim on the name
    release.set()
    one.join()
    two.join()
    return answers[0]


class ConcurrentAddTests(TransactionTestCase):
    """Two administrators adding the same person at once: one member, one clear refusal."""

    def add_while_another_is_adding(self, first: dict[str, str], second: dict[str, str]) -> int:
        answer = post_while_another_adds(lambda: member_create(actor=SYSTEM, **first), "/admin/grants/member/invite/",
                                         {**second, "role": "member"})  # fmt: skip
        return int(answer.status_code)

    def test_the_same_name_at_once_is_a_form_error_not_a_server_error(self) -> None:
        status = self.add_while_another_is_adding(
            {"username": "race", "email": "race@example.com"}, {"username": "race", "email": "other@example.com"}
        )
        assert status == 200
        assert get_user_model().objects.filter(username__iexact="race").count() == 1

    def test_the_same_address_in_another_case_at_once_is_refused(self) -> None:
        status = self.add_while_another_is_adding(
            {"username": "Carol", "email": "carol@example.com"}, {"username": "carol", "email": "CAROL@example.com"}
        )
        assert status == 200
        assert get_user_model().objects.filter(email__iexact="carol@example.com").count() == 1

    def test_the_add_form_at_once_names_the_problem_beside_the_field(self) -> None:
        """Both forms passed; the service refused the second inside its transaction. It was a
        bare "Bad request" page; now the form again, the name's problem beside it, typed values kept."""
        answer = post_while_another_adds(
            lambda: member_create(actor=SYSTEM, username="racer", email="racer@example.com"),
            "/admin/grants/member/add/",
            {"username": "racer", "email": "second@example.com", "password": "", "role": "member"},
        )
        assert answer.status_code == 200
        page = answer.content.decode()
        assert "A user named &#x27;racer&#x27; already exists." in page
        assert 'value="second@example.com"' in page
        assert get_user_model().objects.filter(username="racer").count() == 1


class ConcurrentNamesTests(TransactionTestCase):
    """Two administrators adding a group or a service account of one name at once: the second
    is told beside the field (it was a 500 from the unique index)."""

    def test_a_group_name_at_once(self) -> None:
        answer = post_while_another_adds(
            lambda: group_create(actor=SYSTEM, name="sales"), "/admin/grants/group/add/", {"name": "sales"}
        )
        assert answer.status_code == 200
        assert "A group named &#x27;sales&#x27; already exists." in answer.content.decode()
        assert Group.objects.filter(name="sales").count() == 1

    def test_a_service_account_name_at_once(self) -> None:
        answer = post_while_another_adds(
            lambda: service_account_create(actor=SYSTEM, name="bot"),
            "/admin/grants/serviceaccount/add/",
            {"name": "bot", "is_active": "on"},
        )
        assert answer.status_code == 200
        assert "already exists" in answer.content.decode()
        assert ServiceAccount.objects.filter(name="bot").count() == 1


class OwnersDemotingEachOtherTests(TransactionTestCase):
    def test_two_owners_demoting_each_other_at_once_one_is_refused_not_deadlocked(self) -> None:
        """member_update locked its member, then every owner: two owners demoting each other
        at once took the two rows in opposite orders, and PostgreSQL ended one as a deadlock."""
        from grants import services

        olga = member_create(actor=SYSTEM, username="olga", role="owner")
        oscar = member_create(actor=SYSTEM, username="oscar", role="owner")
        first_holds, second_started = threading.Event(), threading.Event()
        real_refusals = services.member_change_refusals
        outcomes: dict[str, str] = {}

        def refusals_after_a_pause(actor: Any, member: Member, **kwargs: Any) -> dict[str, str]:
            if member.pk == oscar.pk:  # the first request: holding its locks, let the second start
                first_holds.set()
                assert second_started.wait(10)
                threading.Event().wait(0.7)
            return real_refusals(actor, member, **kwargs)

        def demote(name: str, actor: Member, member: Member) -> None:
            try:
                if name == "second":
                    assert first_holds.wait(10)
                    second_started.set()
                member_update(actor=actor, member=member, role="admin", is_active=True, slack_user_id=None)
                outcomes[name] = "ok"
            except ValidationError as error:
                outcomes[name] = " ".join(error.messages)
            except Exception as error:  # the deadlock this test is about
                outcomes[name] = f"ERROR {type(error).__name__}"
            finally:
                connection.close()

        with mock.patch.object(services, "member_change_refusals", refusals_after_a_pause):
            threads = [threading.Thread(target=demote, args=("first", olga, oscar)),
                       threading.Thread(target=demote, args=("second", oscar, olga))]  # fmt: skip
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
        assert outcomes["first"] == "ok"
        assert "last active owner" in outcomes["second"]
        assert list(Member.objects.filter(role="owner").values_list("user__username", flat=True)) == ["olga"]


class OwnersTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.olga = member_create(actor=SYSTEM, username="olga", email="olga@example.com", role="owner")
        cls.oscar = member_create(actor=SYSTEM, username="oscar", email="oscar@example.com", role="owner")

    def test_an_admin_cannot_suspend_offboard_or_deactivate_an_owner(self) -> None:
        with pytest.raises(ValidationError, match="only an owner can suspend or offboard an owner"):
            member_suspend(actor=self.charlie, member=self.olga)
        with pytest.raises(ValidationError, match="only an owner can suspend or offboard an owner"):
            member_offboard(actor=self.charlie, member=self.olga, send_export=False)
        self.client.force_login(self.charlie.user)
        response = self.client.post(f"/admin/grants/member/{self.olga.pk}/suspend/", {"builds": "cancel"})
        assert response.status_code in (200, 302)
        with pytest.raises(ValidationError, match="only an owner can deactivate an owner"):
            member_update(actor=self.charlie, member=self.olga, role="owner", is_active=False, slack_user_id=None)
        olga = Member.objects.get(pk=self.olga.pk)
        assert olga.is_active
        assert olga.user.is_active
        assert olga.offboarded_at is None
        # Another owner may.
        member_suspend(actor=self.oscar, member=self.olga)


class SlackLinkTests(BrainTestCase):
    def test_an_administrator_cannot_link_a_slack_account_to_someone_only_remove_it(self) -> None:
        """Setting alice's Slack id to the admin's own made Slack commands act as alice."""
        self.client.force_login(self.charlie.user)
        url = f"/admin/grants/member/{self.alice.pk}/change/"
        response = self.client.post(url, {"role": "member", "is_active": "on", "slack_user_id": "U0CHARLIE"})
        assert response.status_code == 200
        assert "linked by its own person" in response.content.decode()
        assert Member.objects.get(pk=self.alice.pk).slack_user_id is None
        Member.objects.filter(pk=self.alice.pk).update(slack_user_id="U0ALICE")  # as /brain link does
        page = self.client.get(url).content.decode()
        assert 'name="initial-slack_user_id" value="U0ALICE"' in page  # the link as shown travels along
        shown = {"role": "member", "is_active": "on", "initial-slack_user_id": "U0ALICE"}
        response = self.client.post(url, {**shown, "slack_user_id": ""})
        assert response.status_code == 302
        assert Member.objects.get(pk=self.alice.pk).slack_user_id is None
        # A form opened before the person linked (the field blank then) keeps the link they made
        # meanwhile; one opened before they linked another account refuses to remove it unseen.
        Member.objects.filter(pk=self.alice.pk).update(slack_user_id="U0ALICE")
        stale = {"role": "admin", "is_active": "on", "initial-slack_user_id": "", "slack_user_id": ""}
        assert self.client.post(url, stale).status_code == 302
        assert Member.objects.get(pk=self.alice.pk).slack_user_id == "U0ALICE"
        assert Member.objects.get(pk=self.alice.pk).role == "admin"
        Member.objects.filter(pk=self.alice.pk).update(slack_user_id="U0ALICE2")
        refused = self.client.post(url, {**shown, "role": "admin", "slack_user_id": ""})
        assert refused.status_code == 200
        assert "changed after this page was opened" in refused.content.decode()
        assert Member.objects.get(pk=self.alice.pk).slack_user_id == "U0ALICE2"
        # The add form has no Slack field: a posted one is ignored.
        added = self.client.post(
            "/admin/grants/member/add/", {"username": "dora", "role": "member", "slack_user_id": "U0X"}, follow=True
        )
        assert "dora cannot sign in yet: no password and no email." in added.content.decode()
        assert Member.objects.get(user__username="dora").slack_user_id is None


class LeaversTests(BrainTestCase):
    def test_a_member_who_left_frees_their_address_and_slack_account(self) -> None:
        Member.objects.filter(pk=self.bob.pk).update(slack_user_id="U999")
        member_offboard(actor=self.charlie, member=Member.objects.get(pk=self.bob.pk), send_export=False)
        assert Member.objects.get(pk=self.bob.pk).slack_user_id is None
        returning = member_create(actor=self.charlie, username="bob2", email="BOB@example.com", slack_user_id="U999")
        assert returning.slack_user_id == "U999"
        event = AuditEvent.objects.get(action="member.offboard", target="bob")
        assert event.metadata["slack_unlinked"] is True

    def test_an_address_in_use_is_a_form_error_beside_the_field(self) -> None:
        self.client.force_login(self.charlie.user)
        response = self.client.post(
            "/admin/grants/member/add/", {"username": "dora", "email": "BOB@example.com", "role": "member"}
        )
        assert response.status_code == 200
        assert "Another member already uses this email address." in response.content.decode()
        assert "dora" in response.content.decode()  # what was typed stays

    def test_the_user_admin_refuses_a_second_holder_of_an_address_and_audits_changes(self) -> None:
        root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-12345")
        self.client.force_login(root)
        bob = self.bob.user
        url = f"/admin/auth/user/{bob.pk}/change/"
        form = {"email": "ALICE@example.com", "first_name": "", "last_name": "", "date_joined_0": "2026-01-01",
                "date_joined_1": "00:00:00", "last_login_0": "", "last_login_1": ""}  # fmt: skip
        response = self.client.post(url, form)
        assert response.status_code == 200
        assert "Another user already uses this email address." in response.content.decode()
        response = self.client.post(url, {**form, "email": "robert@example.com"})
        assert response.status_code == 302
        event = AuditEvent.objects.get(action="user.change", target="bob")
        assert "email" in event.metadata["fields"]
        assert "robert" not in str(event.metadata)
        response = self.client.post(
            "/admin/auth/user/add/",
            {"username": "mallory", "password1": "a long passphrase 42", "password2": "a long passphrase 42",
             "usable_password": "true"},
        )  # fmt: skip
        assert response.status_code == 302
        assert AuditEvent.objects.filter(action="user.create", target="mallory").exists()
        mallory = get_user_model().objects.get(username="mallory")
        response = self.client.post(f"/admin/auth/user/{mallory.pk}/delete/", {"post": "yes"})
        assert response.status_code == 302
        assert AuditEvent.objects.filter(action="auth.user.delete", target="mallory").exists()


class CredentialsAuditTests(BrainTestCase):
    def test_personal_tokens_and_ended_sessions_are_audited(self) -> None:
        row, raw = api_token_issue(actor=self.bob, name="laptop script")
        event = AuditEvent.objects.get(action="personal_token.issue", target=str(row.pk))
        assert event.actor_label == "bob"
        assert raw not in str(event.metadata)
        api_token_revoke(actor=self.bob, token_id=row.pk)
        assert AuditEvent.objects.filter(action="personal_token.revoke", target=str(row.pk)).exists()
        self.client.force_login(self.bob.user)
        assert self.client.post("/account/security/", {"end_others": "1"}).status_code == 302
        assert AuditEvent.objects.filter(action="session.end_others", target="bob").exists()

    def test_a_reactivated_service_account_gets_no_old_credential_back(self) -> None:
        account = service_account_create(actor=SYSTEM, name="asker")
        _, raw = question_credential_issue(actor=SYSTEM, name="bot", service_account=account)
        assert question_credential_owner(raw) == account
        service_account_change(actor=self.charlie, account=account, description="", is_active=False)
        service_account_change(actor=self.charlie, account=account, description="", is_active=True)
        assert question_credential_owner(raw) is None
        event = AuditEvent.objects.get(action="service_account.deactivate", target="asker")
        assert event.metadata == {"question_credentials": 1}


class MemberCommandTests(BrainTestCase):
    def test_bad_slack_ids_and_weak_passwords_are_command_errors(self) -> None:
        Member.objects.filter(pk=self.alice.pk).update(slack_user_id="U1")
        with pytest.raises(CommandError, match="already linked"):
            call_command("brain_member", "add", "erin", "--slack-user-id", "U1", stdout=io.StringIO())
        with pytest.raises(CommandError, match="slack_user_id"):
            call_command("brain_member", "add", "erin", "--slack-user-id", "U" * 40, stdout=io.StringIO())
        with pytest.raises(CommandError, match="password"):
            call_command("brain_member", "add", "erin", "--password", "x", stdout=io.StringIO())
        assert not Member.objects.filter(user__username="erin").exists()
