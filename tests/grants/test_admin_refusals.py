"""What the admin offers, it lets you save; what it refuses, it says why, beside what you typed.

Each case a reviewer reached: a page offered whose save was refused (after the password form
had already saved a password, unaudited and untold), an error that named a database
constraint, a bare 400 for a too-long email, "you may not" for a build simply decided in
another tab, an admin undoing an owner's suspension of an owner.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core import mail
from django.core.exceptions import ValidationError

from accounts.services import invitation_send, member_offboard, member_suspend
from builds.driver import import_job_create, job_step
from builds.models import BuildJob
from grants.models import AuditEvent, Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create, service_account_create
from tests.base import BrainTestCase, page_markdown

PASSWORD = "another long pass 77"
FORM = {"password1": PASSWORD, "password2": PASSWORD, "usable_password": "true"}


class StaffWithoutAMemberRowTests(BrainTestCase):
    """Django's user permissions given to a login with no member row: nothing is offered."""

    def setUp(self) -> None:
        self.staff = get_user_model().objects.create_user("staffy", "s@example.com", "pw-staffy-12345", is_staff=True)
        self.staff.user_permissions.add(*Permission.objects.filter(
            codename__in=["add_user", "change_user", "view_user", "delete_user"]))  # fmt: skip
        self.nina = get_user_model().objects.create_user("nina", "nina@example.com", "old-password-123")
        self.client.force_login(self.staff)

    def test_the_user_pages_are_not_offered(self) -> None:
        for url in ("/admin/auth/user/", "/admin/auth/user/add/", f"/admin/auth/user/{self.nina.pk}/change/",
                    f"/admin/auth/user/{self.nina.pk}/delete/"):  # fmt: skip
            assert self.client.get(url).status_code == 403, url

    def test_the_oauth_token_pages_are_not_offered(self) -> None:
        self.staff.user_permissions.add(*Permission.objects.filter(
            codename__in=["view_accesstoken", "change_accesstoken", "view_refreshtoken", "view_idtoken"]))  # fmt: skip
        for url in ("/admin/oauth2_provider/accesstoken/", "/admin/oauth2_provider/refreshtoken/",
                    "/admin/oauth2_provider/idtoken/"):  # fmt: skip
            assert self.client.get(url).status_code == 403, url

    def test_a_password_is_never_set_unaudited(self) -> None:
        answer = self.client.post(f"/admin/auth/user/{self.nina.pk}/password/", FORM)
        assert answer.status_code in (400, 403)
        self.nina.refresh_from_db()
        assert not self.nina.check_password(PASSWORD)
        assert mail.outbox == []


class UserAdminTests(BrainTestCase):
    def test_a_password_set_by_an_administrator_is_audited_and_told(self) -> None:
        nina = get_user_model().objects.create_user("nina", "nina@example.com", "old-password-123")
        self.client.force_login(self.charlie.user)
        superuser_like = get_user_model().objects.get(pk=self.charlie.user.pk)
        superuser_like.is_superuser = True
        superuser_like.save(update_fields=["is_superuser"])
        answer = self.client.post(f"/admin/auth/user/{nina.pk}/password/", FORM)
        assert answer.status_code == 302
        nina.refresh_from_db()
        assert nina.check_password(PASSWORD)
        assert (
            AuditEvent.objects.filter(action="member.password_set").exists()
            or AuditEvent.objects.filter(target="nina").exists()
        )
        assert [message.to for message in mail.outbox] == [["nina@example.com"]]

    def test_a_login_without_a_member_row_is_made_a_member_by_the_action_the_list_names(self) -> None:
        root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123456")
        nina = get_user_model().objects.create_user("nina", "nina@example.com", "a long passphrase 42")
        self.client.force_login(root)
        listing = self.client.get("/admin/auth/user/").content.decode()
        assert "Make the selected logins members" in listing
        answer = self.client.post("/admin/auth/user/", {"action": "make_members", "_selected_action": [nina.pk]})
        assert answer.status_code == 302
        assert Member.objects.get(user=nina).role == Member.Role.MEMBER
        assert AuditEvent.objects.filter(action="member.create", target="nina").exists()


class AuditAttributionTests(BrainTestCase):
    """The "system" actor is what no person did: a signed-in login without a member row (a superuser
    made by createsuperuser, acting in the admin) is named by its username."""

    def test_a_superuser_without_a_member_row_is_named_in_the_audit(self) -> None:
        root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123456")
        self.client.force_login(root)
        answer = self.client.post("/admin/grants/group/add/", {"name": "sales"})
        assert answer.status_code == 302
        event = AuditEvent.objects.get(action="group.create")
        assert (event.actor_kind, event.actor_id, event.actor_label) == ("user", root.pk, "root")
        listed = self.client.get("/admin/grants/auditevent/", {"actor_kind": "user"}).content.decode()
        assert "group.create" in listed

    def test_a_login_without_a_member_row_ending_its_sessions_is_named(self) -> None:
        nina = get_user_model().objects.create_user("nina", "nina@example.com", "a long passphrase 42")
        self.client.force_login(nina)
        assert self.client.post("/account/security/", {"end_others": "1"}).status_code == 302
        event = AuditEvent.objects.get(action="session.end_others")
        assert (event.actor_kind, event.actor_label) == ("user", "nina")

    def test_work_outside_a_request_stays_system(self) -> None:
        from grants.services import group_create

        group_create(actor=SYSTEM, name="ops")
        assert AuditEvent.objects.get(action="group.create").actor_kind == "system"


class MemberFormTests(BrainTestCase):
    def test_an_email_longer_than_its_column_is_a_form_error_keeping_the_input(self) -> None:
        self.client.force_login(self.charlie.user)
        long_email = "a" * 250 + "@example.com"
        answer = self.client.post("/admin/grants/member/add/", {
            "username": "dora", "email": long_email, "password": "a long passphrase 42", "role": "member"})  # fmt: skip
        assert answer.status_code == 200
        assert b"errorlist" in answer.content
        assert b"dora" in answer.content  # what was typed is still there
        assert not Member.objects.filter(user__username="dora").exists()

    def test_a_compatibility_spelling_of_a_taken_name_is_taken(self) -> None:
        """Django stores a username NFKC-normalised: "Ａlice" (a full-width A) passed the
        taken-name check and was stored as "Alice", a second alice."""
        look_alike = "\uff21lice"
        with pytest.raises(ValidationError, match="already exists"):
            member_create(actor=SYSTEM, username=look_alike)
        self.client.force_login(self.charlie.user)
        answer = self.client.post("/admin/grants/member/add/", {
            "username": look_alike, "email": "", "password": "", "role": "member"})  # fmt: skip
        assert answer.status_code == 200
        assert "already exists" in answer.content.decode()
        users = get_user_model().objects.filter(username__iexact="alice").values_list("username", flat=True)
        assert list(users) == ["alice"]
        assert member_create(actor=SYSTEM, username="\uff24ora").username == "Dora"

    def test_names_that_fold_to_one_are_one_name(self) -> None:
        """PostgreSQL's case-insensitive match does not fold "ß" to "ss" nor "ς" to "σ":
        "straße" and "STRASSE" were two members with one name to everyone reading it."""
        member_create(actor=SYSTEM, username="straße")
        member_create(actor=SYSTEM, username="ΟΔΥΣΣΕΑΣ")
        for taken in ("STRASSE", "strasse", "Strasse", "STRAẞE", "οδυσσεας", "οδυσσεαΣ"):
            with self.subTest(taken=taken), pytest.raises(ValidationError, match="already exists"):
                member_create(actor=SYSTEM, username=taken)
        self.client.force_login(self.charlie.user)
        answer = self.client.post("/admin/grants/member/add/", {
            "username": "STRASSE", "email": "", "password": "", "role": "member"})  # fmt: skip
        assert "already exists" in answer.content.decode()
        assert member_create(actor=SYSTEM, username="strasser").username == "strasser"  # another name
        # Django's user add form checked the name exactly: STRASSE came in beside straße.
        root = get_user_model().objects.create_superuser("root", "root@example.com", "a-long-root-password")
        self.client.force_login(root)
        answer = self.client.post("/admin/auth/user/add/", {
            "username": "STRASSE", "usable_password": "false", "password1": "", "password2": ""})  # fmt: skip
        assert answer.status_code == 200
        assert "A user named &#x27;STRASSE&#x27; already exists." in answer.content.decode()
        assert not get_user_model().objects.filter(username="STRASSE").exists()


class OwnerLifecycleTests(BrainTestCase):
    def test_an_admin_cannot_reactivate_an_owner_an_owner_suspended(self) -> None:
        olivia = member_create(actor=SYSTEM, username="olivia", role="owner")
        oscar = member_create(actor=SYSTEM, username="oscar", role="owner")
        member_suspend(actor=olivia, member=oscar)
        self.client.force_login(self.charlie.user)  # an admin
        answer = self.client.post(f"/admin/grants/member/{oscar.pk}/reactivate/", follow=True)
        assert "only an owner can reactivate an owner" in answer.content.decode().lower()
        oscar.refresh_from_db()
        assert not oscar.is_active

    def test_a_new_invitation_to_someone_who_left_says_they_left(self) -> None:
        owner = member_create(actor=SYSTEM, username="olivia", role="owner")
        gone = member_create(actor=SYSTEM, username="gina", email="gina@example.com")
        member_offboard(actor=owner, member=gone, send_export=False)
        with pytest.raises(ValidationError, match="has left"):
            invitation_send(actor=owner, member=Member.objects.get(pk=gone.pk))


class ReviewTests(BrainTestCase):
    def test_rejecting_a_build_decided_in_another_tab_says_so(self) -> None:
        victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=victor, path="topics/", permission="approve")
        files = [("topics/pricing/renewals.md", page_markdown(title="Renewals", body="# Renewals\n\nYearly.\n"))]
        build = import_job_create(requester=self.alice, files=files, title="Renewal terms")
        while job_step(BuildJob.objects.get(build=build).pk) == "progress":
            pass
        self.client.force_login(victor.user)
        assert self.client.post(f"/builds/{build.public_id}/reject", {"reason": "no"}).status_code == 302
        again = self.client.post(f"/builds/{build.public_id}/reject", {"reason": "second tab"}, follow=True)
        assert again.status_code == 200
        assert "only a build awaiting review can be rejected" in again.content.decode()


class MirrorFormTests(BrainTestCase):
    def test_a_bad_mirror_name_is_said_by_its_rule(self) -> None:
        account = service_account_create(actor=SYSTEM, name="mirror-bot")
        self.client.force_login(self.charlie.user)
        answer = self.client.post("/admin/mirror/mirror/add/", {
            "name": "Wiki Mirror", "remote_url": "https://github.com/o/r.git", "branch": "main",
            "service_account": account.pk, "enabled": "on"})  # fmt: skip
        assert answer.status_code == 200
        page = answer.content.decode()
        assert "mirror_name_form" not in page
        assert "lower-case letters, digits" in page


class MemberLoginDeletionTests(BrainTestCase):
    """A member leaves by offboarding (export, audit, shared memories kept), never by deleting
    their login, which would take the member row with it: the user admin refused that only as
    "no permission to delete member"; it now says what to do instead."""

    def setUp(self) -> None:
        self.root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123456")
        self.client.force_login(self.root)

    def test_a_members_login_cannot_be_deleted_and_the_page_says_offboard(self) -> None:
        page = self.client.get(f"/admin/auth/user/{self.alice.user.pk}/delete/").content.decode()
        assert "offboard" in page.lower()
        self.client.post(f"/admin/auth/user/{self.alice.user.pk}/delete/", {"post": "yes"})
        assert Member.objects.filter(pk=self.alice.pk).exists()
        assert get_user_model().objects.filter(pk=self.alice.user.pk).exists()

    def test_a_bulk_delete_including_a_member_deletes_nobody(self) -> None:
        loose = get_user_model().objects.create_user("loose", "loose@example.com", "a long passphrase 42")
        self.client.post("/admin/auth/user/", {"action": "delete_selected", "post": "yes",
                                               "_selected_action": [loose.pk, self.alice.user.pk]})  # fmt: skip
        assert Member.objects.filter(pk=self.alice.pk).exists()
        assert get_user_model().objects.filter(pk=loose.pk).exists()

    def test_a_login_without_a_member_row_can_still_be_deleted(self) -> None:
        loose = get_user_model().objects.create_user("loose", "loose@example.com", "a long passphrase 42")
        answer = self.client.post(f"/admin/auth/user/{loose.pk}/delete/", {"post": "yes"})
        assert answer.status_code == 302
        assert not get_user_model().objects.filter(pk=loose.pk).exists()
        assert AuditEvent.objects.filter(target__contains="loose").exists()
