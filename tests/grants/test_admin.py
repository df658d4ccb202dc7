"""The admin administers grants through the services and shows no content."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.core.exceptions import ValidationError

from corpus.models import Chunk, Page, Revision, Source
from grants.models import AuditEvent, Grant, Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create, member_update
from tests.base import BrainTestCase


class AdminTests(BrainTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)

    def test_no_content_models_are_registered(self) -> None:
        for model in (Page, Revision, Chunk, Source):
            assert not admin.site.is_registered(model)

    def test_grant_form_shows_scope_errors(self) -> None:
        response = self.client.post(
            "/admin/grants/grant/add/",
            {"member": self.bob.pk, "path": "Topics//x/", "permission": 1},
        )
        assert response.status_code == 200
        assert "must be lower-case" in response.content.decode()
        response = self.client.post(
            "/admin/grants/grant/add/",
            {"member": self.bob.pk, "path": "topics/", "category": "pricing", "permission": 1},
        )
        assert "exactly one scope" in response.content.decode()
        # A folder without its '/' named nothing, silently.
        response = self.client.post(
            "/admin/grants/grant/add/", {"member": self.bob.pk, "path": "topics", "permission": 1}
        )
        assert "for everything in the folder, end it with &#x27;/&#x27; (topics/)" in response.content.decode()
        # No subject: the rule in words, not the database constraint's name.
        response = self.client.post("/admin/grants/grant/add/", {"path": "topics/", "permission": 1})
        page = response.content.decode()
        assert "a grant names exactly one subject" in page
        assert "grant_exactly_one_subject" not in page
        assert not Grant.objects.filter(path="topics").exists()

    def test_grant_added_through_the_service_is_audited(self) -> None:
        response = self.client.post(
            "/admin/grants/grant/add/", {"member": self.bob.pk, "category": "pricing", "permission": 2}
        )
        assert response.status_code == 302
        grant = Grant.objects.get(member=self.bob, category="pricing")
        event = AuditEvent.objects.get(action="grant.issue", target=str(grant.pk))
        assert event.actor_label == "charlie"

    def test_an_identical_grant_is_refused_on_the_form_and_at_the_service(self) -> None:
        """The same grant could be issued twice: revoking one then left the other granting it."""
        first = {"member": self.bob.pk, "category": "pricing", "permission": 2}
        assert self.client.post("/admin/grants/grant/add/", first).status_code == 302
        response = self.client.post("/admin/grants/grant/add/", first)
        assert response.status_code == 200
        body = response.content.decode()
        assert "already holds this grant" in body
        assert body.count("already holds this grant") == 1
        assert Grant.objects.filter(member=self.bob, category="pricing").count() == 1
        # Another permission on the same scope is another grant.
        assert self.client.post("/admin/grants/grant/add/", {**first, "permission": 1}).status_code == 302
        grant_issue(actor=SYSTEM, member=self.bob, path="", permission="read")
        with pytest.raises(ValidationError, match="already holds this grant"):
            grant_issue(actor=SYSTEM, member=self.bob, path="", permission="read")
        assert Grant.objects.filter(member=self.bob, path="").count() == 1

    def test_plain_member_cannot_open_the_admin_models(self) -> None:
        self.client.force_login(self.bob.user)
        assert self.client.get("/admin/grants/grant/").status_code == 302

    def test_audit_log_is_read_only(self) -> None:
        response = self.client.get("/admin/grants/auditevent/")
        assert response.status_code == 200
        assert self.client.get("/admin/grants/auditevent/add/").status_code == 403

    def test_the_audit_log_names_no_page_or_capture_the_administrator_cannot_read(self) -> None:
        """Charlie administers but holds no grant: the log showed a secret page's path on its
        promotion, and a search for a path told apart the paths in use from the rest."""
        from tests.base import capture, publish

        secret = "board/merger-with-northwind.md"
        publish(secret, title="Merger", sensitivity="secret")
        capture("board/merger-memo", title="Memo", sensitivity="restricted")
        grant_issue(actor=SYSTEM, member=self.charlie, path="topics/", permission="read")
        publish("topics/pricing/plans.md", title="Plans")
        listed = self.client.get("/admin/grants/auditevent/").content.decode()
        assert secret not in listed
        assert "board/merger-memo" not in listed
        assert "topics/pricing/plans.md" in listed  # one they can read is named
        assert "(not shown: you cannot read it)" in listed
        for term in (secret, "board/no-such-page.md"):
            found = self.client.get("/admin/grants/auditevent/", {"q": term}).content.decode()
            assert "0 audit events" in found or "0 results" in found, term
        event = AuditEvent.objects.filter(target=secret).first()
        assert event is not None
        detail = self.client.get(f"/admin/grants/auditevent/{event.pk}/change/").content.decode()
        assert secret not in detail
        # A build's events name the pages it drafted in their metadata.
        from builds.services import build_open, build_write_page
        from tests.base import page_markdown

        dora = member_create(actor=SYSTEM, username="dora")
        grant_issue(actor=SYSTEM, member=dora, path="board/", permission="suggest")
        build = build_open(actor=dora, title="Board papers")
        build_write_page(build=build, path="board/agenda.md", markdown=page_markdown(owner="dora", title="Agenda"))
        drafted = AuditEvent.objects.get(action="build.write_page")
        shown = self.client.get(f"/admin/grants/auditevent/{drafted.pk}/change/").content.decode()
        assert "board/agenda.md" not in shown
        # A figure recorded on the secret page names it in its metadata; a refused secret in a
        # rewrite of it, or in a capture's text, names the page or capture as its target.
        import datetime as dt

        from brain.text.secrets import SecretRefused
        from corpus.figures import figure_record
        from corpus.services import revision_create
        from corpus.sources import source_tag
        from tests.base import page_markdown

        figure_record(actor=SYSTEM, page_path=secret, key="price-per-share", value="41", unit="USD",
                      as_of=dt.date(2026, 1, 1))  # fmt: skip
        token = "AKIA" + "QYLPMN5HHHFPZAM2"
        with pytest.raises(SecretRefused):
            revision_create(actor=SYSTEM, path=secret, markdown=page_markdown(
                title="Merger", sensitivity="secret", body=f"# Merger\n\nkey {token}\n"))  # fmt: skip
        with pytest.raises(SecretRefused):
            source_tag(actor=SYSTEM, key="board/merger-memo", add=[token])
        listed = self.client.get("/admin/grants/auditevent/").content.decode()
        assert secret not in listed
        assert "price-per-share" not in listed
        assert "board/merger-memo" not in listed
        for event in AuditEvent.objects.filter(action__in=["figure.record", "content.refused"]):
            detail = self.client.get(f"/admin/grants/auditevent/{event.pk}/change/").content.decode()
            assert secret not in detail, event.action
            assert "merger-memo" not in detail, event.action
        found = self.client.get("/admin/grants/auditevent/", {"q": "capture:board/merger-memo"}).content.decode()
        assert "0 audit events" in found or "0 results" in found
        issued = AuditEvent.objects.filter(action="grant.issue", metadata__subject="member:dora").first()
        assert issued is not None  # a grant's scope is the administrator's own business
        assert "board/" in self.client.get(f"/admin/grants/auditevent/{issued.pk}/change/").content.decode()


class MemberAddTests(BrainTestCase):
    """Adding a member in the admin: every submit answers a page, never a server error."""

    ADD_URL = "/admin/grants/member/add/"

    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)

    def post(self, **fields: str) -> Any:
        data = {"username": "", "email": "", "password": "", "role": "member", "slack_user_id": ""}
        data.update(fields)
        return self.client.post(self.ADD_URL, data)

    def test_the_add_form_renders(self) -> None:
        assert self.client.get(self.ADD_URL).status_code == 200

    def test_blank_username_is_a_form_error(self) -> None:
        response = self.post()
        assert response.status_code == 200
        assert "A username is required" in response.content.decode()
        assert not AuditEvent.objects.filter(action="member.create", actor_label="charlie").exists()

    def test_taken_username_is_a_form_error(self) -> None:
        response = self.post(username="bob")
        assert response.status_code == 200
        assert "already exists" in response.content.decode()

    def test_a_key_as_a_username_or_email_is_refused_beside_the_field(self) -> None:
        """A username is shown in every list, audit row and log line: a pasted key was stored."""
        from django.contrib.auth import get_user_model

        from brain.text.secrets import SecretRefused
        from grants.principals import SYSTEM
        from grants.services import member_create

        key = "AKIA" + "Q3ZXVB7TR2LMN4PK"
        for fields in ({"username": key}, {"username": "kim", "email": f"{key}@example.com"}):
            response = self.post(**fields)
            assert response.status_code == 200
            assert "This looks like a secret" in response.content.decode()
            assert key not in response.content.decode()
        root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-12345")
        self.client.force_login(root)
        user_add = self.client.post("/admin/auth/user/add/", {
            "username": key, "password1": "a long passphrase 42", "password2": "a long passphrase 42",
            "usable_password": "true"})  # fmt: skip
        assert user_add.status_code == 200
        assert "This looks like a secret" in user_add.content.decode()
        assert key not in user_add.content.decode()
        with pytest.raises(SecretRefused):
            member_create(actor=SYSTEM, username=key)
        assert not get_user_model().objects.filter(username__in=[key, "kim"]).exists()

    def test_malformed_username_and_email_are_form_errors(self) -> None:
        response = self.post(username="no spaces allowed", email="not-an-email")
        assert response.status_code == 200
        body = response.content.decode()
        assert "Enter a valid username" in body
        assert "Enter a valid email address" in body

    def test_weak_password_is_a_form_error(self) -> None:
        response = self.post(username="dora", password="dora")
        assert response.status_code == 200
        assert "too similar" in response.content.decode() or "too short" in response.content.decode()
        assert not Member.objects.filter(user__username="dora").exists()

    def test_valid_member_is_created_through_the_service_and_audited(self) -> None:
        response = self.post(username="dora", email="dora@example.org", password="a long passphrase 42", role="admin")
        assert response.status_code == 302, response.content.decode()[:2000]
        member = Member.objects.get(user__username="dora")
        assert member.role == "admin"
        assert member.user.check_password("a long passphrase 42")
        assert AuditEvent.objects.filter(action="member.create", target="dora").count() == 1
        # The change page of the new member opens too.
        assert self.client.get(f"/admin/grants/member/{member.pk}/change/").status_code == 200

    def test_member_change_keeps_working(self) -> None:
        response = self.client.post(
            f"/admin/grants/member/{self.bob.pk}/change/", {"role": "admin", "is_active": "", "slack_user_id": ""}
        )
        assert response.status_code == 302
        self.bob.refresh_from_db()
        assert self.bob.role == "admin"
        # Active is not a field any more: suspension (which revokes credentials) is its own action.
        assert self.bob.is_active


class RoleRuleTests(BrainTestCase):
    """Roles change through ``member_update`` only, under three rules, shown beside the field."""

    def setUp(self) -> None:
        self.olivia = member_create(actor=SYSTEM, username="olivia", role="owner", password="pw-olivia-123")

    def change(self, actor: Member, member: Member, role: str) -> Any:
        self.client.force_login(actor.user)
        return self.client.post(f"/admin/grants/member/{member.pk}/change/", {"role": role, "slack_user_id": ""})

    def test_the_last_owner_cannot_be_demoted_or_deactivated(self) -> None:
        with pytest.raises(ValidationError, match="last active owner"):
            member_update(actor=SYSTEM, member=self.olivia, role="admin", is_active=True, slack_user_id=None)
        with pytest.raises(ValidationError, match="last active owner"):
            member_update(actor=SYSTEM, member=self.olivia, role="owner", is_active=False, slack_user_id=None)
        second = member_create(actor=SYSTEM, username="oscar", role="owner")
        response = self.change(second, self.olivia, "member")  # another owner remains: allowed
        assert response.status_code == 302
        event = AuditEvent.objects.get(action="member.update", target="olivia")
        assert event.metadata == {"fields": ["role"], "role": {"from": "owner", "to": "member"}}
        response = self.change(self.charlie, second, "member")
        assert response.status_code == 200
        assert "only an owner can" in response.content.decode()
        self.olivia.refresh_from_db()
        assert self.olivia.role == "member"
        assert Member.objects.get(pk=second.pk).role == "owner"

    def test_an_owner_cannot_demote_themselves_and_sees_why(self) -> None:
        response = self.change(self.olivia, self.olivia, "member")
        assert response.status_code == 200
        assert "your own role" in response.content.decode()
        assert Member.objects.get(pk=self.olivia.pk).role == "owner"

    def test_an_administrator_cannot_change_their_own_role(self) -> None:
        response = self.change(self.charlie, self.charlie, "member")
        assert response.status_code == 200
        assert "your own role" in response.content.decode()
        assert Member.objects.get(pk=self.charlie.pk).role == "admin"
        assert not AuditEvent.objects.filter(action="member.update", target="charlie").exists()

    def test_only_an_owner_gives_or_takes_the_owner_role(self) -> None:
        response = self.change(self.charlie, self.bob, "owner")
        assert response.status_code == 200
        assert "only an owner can" in response.content.decode()
        assert Member.objects.get(pk=self.bob.pk).role == "member"
        with pytest.raises(ValidationError, match="only an owner"):
            member_create(actor=self.charlie, username="eve", role="owner")
        assert not Member.objects.filter(user__username="eve").exists()
        response = self.client.post(
            "/admin/grants/member/add/", {"username": "eve", "role": "owner", "password": "", "slack_user_id": ""}
        )
        assert response.status_code == 200
        assert "only an owner can" in response.content.decode()
        # An owner may; and an administrator still changes the other roles.
        assert self.change(self.olivia, self.bob, "owner").status_code == 302
        assert Member.objects.get(pk=self.bob.pk).role == "owner"
        assert self.change(self.charlie, self.alice, "admin").status_code == 302
        assert Member.objects.get(pk=self.alice.pk).role == "admin"


class PasswordSetByAdministratorTests(BrainTestCase):
    def test_setting_a_password_in_the_admin_is_audited_and_the_person_is_told(self) -> None:
        from django.core import mail

        self.bob.user.email = "bob@example.org"
        self.bob.user.save(update_fields=["email"])
        self.client.force_login(self.charlie.user)
        charlie = self.charlie.user
        charlie.is_superuser = True
        charlie.save(update_fields=["is_superuser"])
        response = self.client.post(
            f"/admin/auth/user/{self.bob.user.pk}/password/",
            {"password1": "a long new passphrase 7", "password2": "a long new passphrase 7"},
        )
        assert response.status_code == 302, response.content.decode()[:500]
        event = AuditEvent.objects.get(action="member.password_set")
        assert event.actor_label == "charlie"
        assert event.target == "bob"
        assert "passphrase" not in str(event.metadata)
        assert len(mail.outbox) == 1
        assert mail.outbox[0].to == ["bob@example.org"]
        assert "charlie" in mail.outbox[0].body
        assert "passphrase" not in mail.outbox[0].body


class AdminExplainAccessTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        from tests.base import DISCOUNT_POLICY, publish

        cls.policy = DISCOUNT_POLICY
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing", sensitivity="restricted")

    def test_a_members_page_lists_their_grants_and_explains_access(self) -> None:
        from grants.principals import SYSTEM
        from grants.services import grant_issue

        # The administrator explaining may read the page (else it is explained as no page).
        grant_issue(actor=SYSTEM, member=self.charlie, category="pricing", permission="read")
        self.client.force_login(self.charlie.user)
        change = self.client.get(f"/admin/grants/member/{self.alice.pk}/change/").content.decode()
        assert "approve on topics/pricing/" in change
        assert f"/admin/grants/member/{self.alice.pk}/explain/" in change
        explained = self.client.get(f"/admin/grants/member/{self.alice.pk}/explain/", {"path": self.policy})
        body = explained.content.decode()
        assert explained.status_code == 200
        assert "Effective permission: approve" in body
        assert "a folder grant reaches ordinary pages only and this page is restricted" in body
        bob = self.client.get(f"/admin/grants/member/{self.bob.pk}/explain/", {"path": self.policy}).content.decode()
        assert "Effective permission: none" in bob
        bad = self.client.get(f"/admin/grants/member/{self.alice.pk}/explain/", {"path": "Bad Path"})
        assert "not a page path" in bad.content.decode()

    def test_a_page_the_administrator_cannot_read_is_explained_as_no_page(self) -> None:
        """An administrator holds no content access: explaining a guessed path told a secret
        page's existence, category and sensitivity apart from a path with no page."""
        from tests.base import publish

        publish("board/merger-with-northwind.md", title="Merger", category="board", sensitivity="secret")
        self.client.force_login(self.charlie.user)
        url = f"/admin/grants/member/{self.bob.pk}/explain/"
        secret = self.client.get(url, {"path": "board/merger-with-northwind.md"}).content.decode()
        missing = self.client.get(url, {"path": "board/merger-with-southwind.md"}).content.decode()
        for body in (secret, missing):
            # Said as what it is — the answer for a page written there — and never as a fact
            # about the path ("no page exists there yet" was false for the secret page).
            assert "no page exists" not in body
            assert "No page you can read is at this path" in body
            assert "Effective permission on such a page: none" in body
        main = [body.split('id="content-main"')[1].replace("northwind", "southwind") for body in (secret, missing)]
        assert main[0] == main[1]  # not-permitted reads as not-found
        assert "category board" not in secret

    def test_only_administrators_may_explain(self) -> None:
        self.client.force_login(self.bob.user)
        response = self.client.get(f"/admin/grants/member/{self.alice.pk}/explain/", {"path": self.policy})
        assert response.status_code in (302, 403)
        assert "Effective permission" not in response.content.decode()


class AdminUsersTests(BrainTestCase):
    def test_a_login_without_a_member_is_told_what_is_missing(self) -> None:
        from django.contrib.auth import get_user_model

        lonely = get_user_model().objects.create_user("lonely", password="pw-lonely-123", is_staff=True)
        root = get_user_model().objects.create_superuser("root", password="pw-root-12345")
        self.client.force_login(root)  # Django's user admin is the superuser's
        listing = self.client.get("/admin/auth/user/").content.decode()
        assert "this login reaches no page, memory or build" in listing
        change = self.client.get(f"/admin/auth/user/{lonely.pk}/change/").content.decode()
        assert "Make the selected logins members" in change

    def test_a_members_login_is_not_renamed_or_switched_off_in_the_user_admin(self) -> None:
        """Unticking "active" there skipped suspension (ticking it again revived every revoked
        token and session) and a rename moved page ownership; neither was audited."""
        from django.contrib.auth import get_user_model

        root = get_user_model().objects.create_superuser("root", password="pw-root-12345")
        self.client.force_login(root)
        url = f"/admin/auth/user/{self.bob.user.pk}/change/"
        page = self.client.get(url)
        form = {name: value for name, value in page.context["adminform"].form.initial.items() if value is not None}
        form.update({"username": "bobby", "email": "bob@example.com", "date_joined_0": "2026-01-01",
                     "date_joined_1": "00:00:00", "last_login_0": "", "last_login_1": ""})  # fmt: skip
        form.pop("is_active", None)  # unticked
        form.pop("groups", None)
        form.pop("user_permissions", None)
        self.client.post(url, form)
        bob = get_user_model().objects.get(pk=self.bob.user.pk)
        assert (bob.username, bob.is_active, bob.is_superuser) == ("bob", True, False)
        assert 'name="is_active"' not in self.client.get(url).content.decode()

    def test_what_an_administrator_deletes_in_the_admin_is_audited(self) -> None:
        """Deleting a group or a service account took their grants along, with no record."""
        from grants.services import group_create, service_account_create

        group = group_create(actor=SYSTEM, name="sales", description="")
        grant_issue(actor=SYSTEM, group=group, path="topics/", permission="read")
        bots = [service_account_create(actor=SYSTEM, name=f"bot-{n}", description="") for n in range(2)]
        self.client.force_login(self.charlie.user)
        assert self.client.post(f"/admin/grants/group/{group.pk}/delete/", {"post": "yes"}).status_code == 302
        bulk = {"action": "delete_selected", "post": "yes", "_selected_action": [str(bot.pk) for bot in bots]}
        assert self.client.post("/admin/grants/serviceaccount/", bulk).status_code == 302
        events = AuditEvent.objects.filter(action__endswith=".delete")
        assert sorted(events.values_list("action", "target")) == [
            ("grants.group.delete", "sales"), ("grants.serviceaccount.delete", "bot-0"),
            ("grants.serviceaccount.delete", "bot-1"),
        ]  # fmt: skip
        assert {event.actor_label for event in events} == {"charlie"}

    def test_a_service_accounts_name_is_not_offered_for_a_change_it_would_not_make(self) -> None:
        from grants.services import service_account_create

        bot = service_account_create(actor=SYSTEM, name="bot", description="")
        self.client.force_login(self.charlie.user)
        url = f"/admin/grants/serviceaccount/{bot.pk}/change/"
        assert 'name="name"' not in self.client.get(url).content.decode()
        self.client.post(url, {"name": "renamed-bot", "description": "the docs bot", "is_active": "on"})
        bot.refresh_from_db()
        assert (bot.name, bot.description) == ("bot", "the docs bot")

    def test_one_groups_and_one_grants_entry(self) -> None:
        self.client.force_login(self.charlie.user)
        index = self.client.get("/admin/").content.decode()
        assert index.count(">Grants<") == 1
        assert "/admin/auth/group/" not in index
        assert "/admin/oauth2_provider/grant/" not in index
