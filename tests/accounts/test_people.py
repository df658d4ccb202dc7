"""People come and go: invitations, suspension (every credential kind), reactivation, offboarding.

Each credential kind is used once before the suspension (it works) and once after (it is
refused), through the real endpoints; the admin views are driven through Django's admin.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets as stdlib_secrets
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, RefreshToken, set_token_value

from accounts.models import Invitation, SignedInSession
from accounts.services import describe, member_invite, member_offboard, member_reactivate, member_suspend
from accounts.views import SESSIONS_SHOWN
from answers.credentials import question_credential_issue
from builds.models import Build, BuildCredential
from builds.services import build_credential_issue, build_open
from grants.models import AuditEvent, Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create, service_account_create
from memory.models import Memory, MemoryApiToken, MemoryPreference, Workspace
from memory.services import memory_remember
from memory.tokens import api_token_issue
from tests.base import BrainTestCase, publish

MCP_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def signed_in(username: str, password: str) -> Client:
    """A browser that signed in through the real sign-in form (so the sign-in signal runs)."""
    browser = Client()
    response = browser.post("/login/", {"username": username, "password": password})
    assert response.status_code == 302, response.content[:300]
    return browser


def is_signed_in(browser: Client) -> bool:
    response = browser.get("/account/security/")
    return response.status_code == 200


class SuspensionTests(BrainTestCase):
    """Suspend revokes every credential kind, one test per kind; reactivation restores content only."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.app = Application.objects.create(
            name="Agent", client_type="public", authorization_grant_type="authorization-code",
            redirect_uris="https://agent.example/cb",
        )  # fmt: skip

    def suspend(self, **kwargs: Any) -> Any:
        return member_suspend(actor=self.charlie, member=self.bob, **kwargs)

    def mcp(self, token: str, path: str = "/api/mcp") -> int:
        return self.client.post(
            path, data=MCP_LIST, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        ).status_code

    def test_every_session_ends(self) -> None:
        laptop = signed_in("bob", "pw-bob-12345")
        phone = signed_in("bob", "pw-bob-12345")
        assert is_signed_in(laptop)
        assert is_signed_in(phone)
        assert SignedInSession.objects.filter(user=self.bob.user).count() == 2
        ended = self.suspend()
        assert ended.sessions == 2
        assert not is_signed_in(laptop)
        assert not is_signed_in(phone)
        assert not SignedInSession.objects.filter(user=self.bob.user).exists()
        # And the password no longer signs in.
        assert Client().post("/login/", {"username": "bob", "password": "pw-bob-12345"}).status_code == 200

    def test_a_session_the_register_missed_still_ends(self) -> None:
        """Belt and braces: a session from before the register existed is refused by the backend."""
        browser = Client()
        browser.force_login(self.bob.user)
        SignedInSession.objects.filter(user=self.bob.user).delete()
        assert is_signed_in(browser)
        self.suspend()
        assert not is_signed_in(browser)

    def test_oauth_tokens_stop(self) -> None:
        raw, refresh = stdlib_secrets.token_urlsafe(32), stdlib_secrets.token_urlsafe(32)
        access = AccessToken(
            user=self.bob.user, application=self.app, scope="memory corpus:read",
            resource=[f"{settings.BRAIN_BASE_URL}/api/mcp"], expires=timezone.now() + dt.timedelta(hours=1),
        )  # fmt: skip
        set_token_value(access, raw)
        access.save()
        RefreshToken.objects.create(user=self.bob.user, application=self.app, token=refresh, access_token=access)
        assert self.mcp(raw) == 200
        ended = self.suspend()
        assert ended.oauth_tokens >= 1  # the access token (its refresh token is revoked with it)
        assert self.mcp(raw) == 401
        assert RefreshToken.objects.get(token=refresh).revoked is not None

    def test_personal_tokens_stop(self) -> None:
        _, raw = api_token_issue(actor=self.bob, name="laptop")
        bearer = f"Bearer {raw}"
        assert self.client.get("/api/memory/count", HTTP_AUTHORIZATION=bearer).status_code == 200
        assert self.suspend().personal_tokens == 1
        assert self.client.get("/api/memory/count", HTTP_AUTHORIZATION=bearer).status_code == 401

    def test_the_inbound_mail_address_is_retired_for_good(self) -> None:
        from memory.inbound_mail import inbound_address_enable, inbound_address_of

        address = inbound_address_enable(actor=self.bob)
        assert inbound_address_of(self.bob) == address
        assert self.suspend().inbound_addresses == 1
        member_reactivate(actor=self.charlie, member=self.bob)
        assert inbound_address_of(self.bob) is None  # turning mail capture on again gives a new one

    def test_question_credentials_stop(self) -> None:
        _, raw = question_credential_issue(actor=SYSTEM, name="bot", member=self.bob)
        assert self.mcp(raw) == 200
        assert self.suspend().question_credentials == 1
        assert self.mcp(raw) == 401

    def test_build_credentials_stop_and_open_builds_are_cancelled(self) -> None:
        build = build_open(actor=self.bob, title="Bob's edits")
        _, raw = build_credential_issue(actor=self.bob, build=build)
        assert self.mcp(raw, "/api/build/mcp") == 200
        ended = self.suspend()
        assert (ended.builds_cancelled, ended.builds_reassigned) == (1, 0)
        assert self.mcp(raw, "/api/build/mcp") == 401
        build.refresh_from_db()
        assert build.status == Build.Status.CANCELLED

    def test_open_builds_can_be_reassigned_instead(self) -> None:
        build = build_open(actor=self.bob, title="Bob's edits")
        _, raw = build_credential_issue(actor=self.bob, build=build)
        ended = self.suspend(reassign_to=self.alice)
        assert (ended.builds_cancelled, ended.builds_reassigned) == (0, 1)
        build.refresh_from_db()
        assert build.status == Build.Status.OPEN
        assert build.requester_id == self.alice.pk
        # The agent holding Bob's credential stops; Alice issues a fresh one to carry on.
        assert self.mcp(raw, "/api/build/mcp") == 401
        _, fresh = build_credential_issue(actor=self.alice, build=build)
        assert self.mcp(fresh, "/api/build/mcp") == 200
        assert AuditEvent.objects.filter(action="build.reassign", target=str(build.public_id)).exists()

    def test_reactivation_restores_content_but_not_credentials(self) -> None:
        publish("topics/handbook.md", title="Handbook")
        _, raw = api_token_issue(actor=self.bob, name="laptop")
        self.suspend()
        member_reactivate(actor=self.charlie, member=self.bob)
        browser = signed_in("bob", "pw-bob-12345")
        assert browser.get("/pages/topics/handbook.md").status_code == 200
        assert self.client.get("/api/memory/count", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
        assert MemoryApiToken.objects.get(member=self.bob).revoked_at is not None
        actions = list(AuditEvent.objects.filter(target="bob").values_list("action", flat=True))
        assert "member.suspend" in actions
        assert "member.reactivate" in actions

    def test_what_a_suspended_administrator_issued_ends_with_them(self) -> None:
        """An invitation they sent (an administrator's, say) would still make an account, and
        they saw the raw value of each question credential they issued to a bot or a colleague."""
        rogue = member_create(actor=SYSTEM, username="rogue", email="rogue@example.com", role="admin")
        invitation = member_invite(actor=rogue, username="sock", email="sock@attacker.example", role="admin")
        link = re.search(r"/invite/(inv_\S+)", str(mail.outbox[-1].body))
        assert link
        bot = service_account_create(actor=SYSTEM, name="docs-bot")
        grant_issue(actor=SYSTEM, service_account=bot, path="topics/", permission="read")
        _, for_bot = question_credential_issue(actor=rogue, name="bot key", service_account=bot)
        _, for_alice = question_credential_issue(actor=rogue, name="alice's script", member=self.alice)
        _, by_charlie = question_credential_issue(actor=self.charlie, name="kept", service_account=bot)
        assert self.mcp(for_bot) == self.mcp(for_alice) == 200
        state = describe(rogue, viewer=self.charlie)
        assert state["invitations_sent"] == 1
        assert [entry.split(" (")[0] for entry in state["issued_credentials"]] == ["bot key", "alice's script"]

        ended = member_suspend(actor=self.charlie, member=rogue)
        assert (ended.invitations_sent_withdrawn, ended.issued_credentials) == (1, 2)
        assert self.mcp(for_bot) == self.mcp(for_alice) == 401
        assert self.mcp(by_charlie) == 200  # another administrator's credential is not theirs to end
        person = Client()
        person.get(f"/invite/{link.group(1)}")
        assert person.get("/invite/accept").status_code == 410
        invitation.refresh_from_db()
        assert invitation.withdrawn_at is not None
        assert not Member.objects.get(user__username="sock").user.has_usable_password()
        event = AuditEvent.objects.get(action="member.suspend", target="rogue")
        assert event.metadata["issued_credentials"] == 2
        assert event.metadata["invitations_sent_withdrawn"] == 1

    def test_an_administrator_cannot_suspend_themselves_or_the_last_owner(self) -> None:
        with pytest.raises(ValidationError, match="yourself"):
            member_suspend(actor=self.charlie, member=self.charlie)
        owner = Member.objects.create(user=type(self.bob.user).objects.create(username="olga"), role="owner")
        with pytest.raises(ValidationError, match="only an owner can suspend or offboard an owner"):
            member_suspend(actor=self.charlie, member=owner)
        with pytest.raises(ValidationError, match="last active owner"):
            member_suspend(actor=SYSTEM, member=owner)

    def test_a_plain_member_cannot_suspend_anyone(self) -> None:
        with pytest.raises(PermissionDenied):
            member_suspend(actor=self.alice, member=self.bob)
        assert Member.objects.get(pk=self.bob.pk).is_active


class OffboardingTests(BrainTestCase):
    def test_personal_layer_goes_shared_stays_and_the_export_is_mailed_first(self) -> None:
        private = memory_remember(actor=self.bob, content="My salary review is in March.", workspace="personal")
        shared = memory_remember(actor=self.bob, content="The deploy window is Tuesday 10:00.", workspace="company")
        api_token_issue(actor=self.bob, name="laptop")
        MemoryPreference.objects.create(member=self.bob, default_workspace=Workspace.COMPANY)
        publish("topics/owned-by-bob.md", owner="bob", title="Bob's page")

        done = member_offboard(actor=self.charlie, member=self.bob, send_export=True)

        assert done.memories_deleted == 1
        # Charlie administers and reads no page: the page is counted, its path not shown.
        assert done.owned_pages == []
        assert done.owned_unseen == 1
        assert not Memory.objects.filter(author=self.bob, workspace=Workspace.PERSONAL).exists()
        assert not MemoryApiToken.objects.filter(member=self.bob).exists()
        assert not MemoryPreference.objects.filter(member=self.bob).exists()
        assert Memory.objects.filter(pk=shared.memory.pk).exists()
        # The export went to Bob's own address before the deletion, with his personal memory in it.
        (message,) = [m for m in mail.outbox if m.to == ["bob@example.com"]]
        (name, body, _type) = message.attachments[0]
        assert name == "brain-personal-memories.jsonl"
        lines = [json.loads(line) for line in body.decode().splitlines()]
        assert [line["content"] for line in lines] == [private.memory.content]
        # What he shared is shown as written by a former member.
        alice = signed_in("alice", "pw-alice-123")
        assert "bob (former member)" in alice.get(f"/memory/{shared.memory.pk}/").content.decode()
        _, alices_token = api_token_issue(actor=self.alice, name="cli")
        listed = self.client.get("/api/memory/entries", HTTP_AUTHORIZATION=f"Bearer {alices_token}").json()
        authors = {entry["id"]: entry["author"] for entry in listed["memories"]}
        assert authors[str(shared.memory.pk)] == "bob (former member)"
        bob = Member.objects.get(pk=self.bob.pk)
        assert bob.offboarded_at is not None
        assert not bob.is_active
        assert not bob.user.is_active
        event = AuditEvent.objects.get(action="member.offboard", target="bob")
        assert event.metadata["memories_deleted"] == 1
        assert event.metadata["owned_pages"] == 1
        assert "salary" not in json.dumps(event.metadata)

    def test_the_pages_they_own_are_named_only_to_an_administrator_who_reads_them(self) -> None:
        publish("topics/owned-by-bob.md", owner="bob", title="Bob's page")
        publish("board/deal.md", owner="bob", title="Deal", sensitivity="restricted")
        grant_issue(actor=SYSTEM, member=self.charlie, path="topics/", permission="read")
        state = describe(self.bob, viewer=self.charlie)
        assert state["owned_pages"] == ["topics/owned-by-bob.md"]
        assert state["owned_unseen"] == 1
        self.client.force_login(self.charlie.user)
        page = self.client.get(f"/admin/grants/member/{self.bob.pk}/offboard/").content.decode()
        assert "topics/owned-by-bob.md" in page
        assert "board/deal.md" not in page
        assert "1 you cannot read" in page
        assert describe(self.bob, viewer=SYSTEM)["owned_pages"] == ["board/deal.md", "topics/owned-by-bob.md"]

    def test_a_failed_export_mail_deletes_nothing(self) -> None:
        memory_remember(actor=self.bob, content="Keep this.", workspace="personal")
        # The mail server is across a network we do not own: a refusal is simulated.
        with (
            mock.patch("django.core.mail.EmailMessage.send", side_effect=OSError("mail server down")),
            pytest.raises(ValidationError, match="could not be emailed"),
        ):
            member_offboard(actor=self.charlie, member=self.bob, send_export=True)
        assert Memory.objects.filter(author=self.bob, workspace=Workspace.PERSONAL).count() == 1
        bob = Member.objects.get(pk=self.bob.pk)
        assert bob.is_active
        assert bob.offboarded_at is None

    def test_an_offboarded_member_cannot_be_reactivated(self) -> None:
        member_offboard(actor=self.charlie, member=self.bob, send_export=False)
        with pytest.raises(ValidationError, match="offboarded"):
            member_reactivate(actor=self.charlie, member=self.bob)
        # Adding the name again says whose it is, not only that it "already exists".
        admin = Client()
        admin.force_login(self.charlie.user)
        for url in ("/admin/grants/member/add/", "/admin/grants/member/invite/"):
            data = {"username": "Bob", "email": "bob2@example.com", "password": "", "role": "member"}
            page = admin.post(url, data).content.decode()
            assert "(a former member, offboarded: their name stays theirs in the history)" in page, url


class InvitationTests(BrainTestCase):
    def setUp(self) -> None:
        self.admin = Client()
        self.admin.force_login(self.charlie.user)

    def invite(self, username: str = "dana", email: str = "dana@example.com") -> Any:
        return self.admin.post("/admin/grants/member/invite/", {"username": username, "email": email, "role": "member"})

    def link(self) -> str:
        body = mail.outbox[-1].body
        found = re.search(r"https?://\S+/invite/(inv_\S+)", str(body))
        assert found, body
        return f"/invite/{found.group(1)}"

    def test_the_link_sets_a_password_once(self) -> None:
        response = self.invite()
        assert response.status_code == 302, response.content.decode()[:800]
        assert mail.outbox[-1].to == ["dana@example.com"]
        link = self.link()
        person = Client()
        moved = person.get(link)
        assert moved.status_code == 302
        assert moved["Location"] == "/invite/accept"
        form = person.get("/invite/accept")
        assert form.status_code == 200
        assert b"Welcome, dana" in form.content
        assert b"inv_" not in form.content  # the token left the address bar and the page
        done = person.post(
            "/invite/accept", {"new_password1": "river stone 42 lamp", "new_password2": "river stone 42 lamp"}
        )
        assert done.status_code == 302
        assert done["Location"] == "/"
        assert is_signed_in(person)
        assert signed_in("dana", "river stone 42 lamp")
        # Used: the same link again is refused, in a fresh browser too.
        again = Client()
        again.get(link)
        assert again.get("/invite/accept").status_code == 410
        assert AuditEvent.objects.filter(action="member.invite_accepted", target="dana").exists()

    def test_the_link_expires(self) -> None:
        self.invite()
        Invitation.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        person = Client()
        person.get(self.link())
        assert person.get("/invite/accept").status_code == 410
        assert person.post("/invite/accept", {"new_password1": "x" * 20, "new_password2": "x" * 20}).status_code == 410
        assert not Member.objects.get(user__username="dana").user.has_usable_password()

    def test_a_weak_password_is_a_form_error_and_the_link_stays_usable(self) -> None:
        self.invite()
        person = Client()
        person.get(self.link())
        weak = person.post("/invite/accept", {"new_password1": "dana", "new_password2": "dana"})
        assert weak.status_code == 200
        assert b"error" in weak.content
        assert Invitation.objects.get().state == "pending"

    def test_the_link_stops_once_the_person_has_a_password_or_another_address(self) -> None:
        # Otherwise whoever holds the link replaces the password an administrator set, and is them.
        self.invite(email="dana@wrong.example")
        link = self.link()
        dana = Member.objects.get(user__username="dana")
        user = dana.user
        user.email = "dana@example.com"  # an administrator corrects the address
        user.save(update_fields=["email"])
        holder = Client()
        holder.get(link)
        assert holder.get("/invite/accept").status_code == 410
        user.email = "dana@wrong.example"
        user.set_password("set by an administrator 7")
        user.save()
        holder = Client()
        holder.get(link)
        assert holder.get("/invite/accept").status_code == 410
        assert holder.post("/invite/accept", {"new_password1": "taken over 42 x", "new_password2": "taken over 42 x"}
                           ).status_code == 410  # fmt: skip
        assert signed_in("dana", "set by an administrator 7")

    def test_an_address_or_a_name_already_taken_is_refused_whatever_its_case(self) -> None:
        for username, email in (("bobby", "BOB@example.com"), ("Bob", "bob2@example.com")):
            with self.subTest(username=username, email=email):
                response = self.invite(username=username, email=email)
                assert response.status_code == 200
                assert "already" in response.content.decode()
                assert not Member.objects.filter(user__username=username).exists()

    def test_every_problem_is_shown_beside_its_field_with_what_was_typed(self) -> None:
        """A key typed as the name or the address was a bare "Bad request" page; a taken name
        or address an error above the form. Now each beside its field, nothing sent or made."""
        key_name = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
        cases = [
            ({"username": key_name}, "username", "This looks like a secret", key_name),
            ({"email": "AKIAIOSFODNN7EXAMPLE@example.com"}, "email", "This looks like a secret", "AKIAIOSFODNN7"),
            ({"username": "Alice"}, "username", "A user named &#x27;Alice&#x27; already exists.", None),
            ({"email": "ALICE@example.com"}, "email", "Another member already uses this email address.", None),
        ]
        for typed, field, message, never_shown in cases:
            data = {"username": "dana", "email": "dana@example.com", "role": "member", **typed}
            answer = self.admin.post("/admin/grants/member/invite/", data)
            assert answer.status_code == 200, typed
            form = answer.context["form"]
            assert any(message.replace("&#x27;", "'") in error for error in form.errors[field]), form.errors
            page = answer.content.decode()
            if never_shown:
                assert never_shown not in page
        assert not mail.outbox
        assert not Member.objects.filter(user__username="dana").exists()

    def test_a_new_invitation_withdraws_the_old_link(self) -> None:
        self.invite()
        first = self.link()
        dana = Member.objects.get(user__username="dana")
        assert self.admin.post(f"/admin/grants/member/{dana.pk}/invite/").status_code == 302
        second = self.link()
        assert first != second
        person = Client()
        person.get(first)
        assert person.get("/invite/accept").status_code == 410
        person.get(second)
        assert person.get("/invite/accept").status_code == 200

    def test_a_taken_username_or_blank_email_is_a_form_error_and_no_mail_is_sent(self) -> None:
        for username, email, problem in (("bob", "x@example.com", b"already exists"), ("erik", "", b"required")):
            response = self.invite(username, email)
            assert response.status_code == 200
            assert problem in response.content, response.content.decode()[:2000]
        assert mail.outbox == []

    def test_an_unknown_or_malformed_link_is_410(self) -> None:
        for token in ("inv_nope", "something-else", "inv_" + "a" * 43):
            person = Client()
            person.get(f"/invite/{token}")
            assert person.get("/invite/accept").status_code == 410


class AdminLifecycleTests(BrainTestCase):
    def setUp(self) -> None:
        self.admin = Client()
        self.admin.force_login(self.charlie.user)

    def test_member_page_shows_status_groups_apps_and_actions(self) -> None:
        page = self.admin.get(f"/admin/grants/member/{self.bob.pk}/change/").content.decode()
        for text in ("Status", "active", "Suspend", "Offboard", "Groups", "Connected apps", "Signed-in sessions"):
            assert text in page, text

    def test_suspend_from_the_admin_with_a_reassignment(self) -> None:
        build = build_open(actor=self.bob, title="Bob's edits")
        url = f"/admin/grants/member/{self.bob.pk}/suspend/"
        form = self.admin.get(url)
        assert form.status_code == 200
        assert b"Open builds they requested: 1" in form.content
        missing = self.admin.post(url, {"builds": "reassign"})
        assert missing.status_code == 200
        assert b"Choose who carries their builds on" in missing.content
        done = self.admin.post(url, {"builds": "reassign", "reassign_to": self.alice.pk})
        assert done.status_code == 302
        build.refresh_from_db()
        assert build.requester_id == self.alice.pk
        assert not Member.objects.get(pk=self.bob.pk).is_active
        changed = self.admin.get(f"/admin/grants/member/{self.bob.pk}/change/").content.decode()
        assert "suspended" in changed
        assert ">bob is suspended." in changed  # the name as it is ("Bob" is nobody's)
        assert 'rel="icon"' in changed  # or the browser asks for /favicon.ico on every admin page
        assert self.admin.post(f"/admin/grants/member/{self.bob.pk}/reactivate/").status_code == 302
        assert Member.objects.get(pk=self.bob.pk).is_active

    def test_the_suspend_page_names_the_credentials_they_issued_before_they_end(self) -> None:
        rogue = member_create(actor=SYSTEM, username="rogue", email="rogue@example.com", role="admin")
        bot = service_account_create(actor=SYSTEM, name="docs-bot")
        question_credential_issue(actor=rogue, name="bot key", service_account=bot)
        url = f"/admin/grants/member/{rogue.pk}/suspend/"
        page = self.admin.get(url).content.decode()
        assert "Question credentials they issued" in page
        assert "bot key" in page
        assert "held by docs-bot" in page
        done = self.admin.post(url, {"builds": "cancel"}, follow=True).content.decode()
        assert "1 question credential(s) they issued to others (issue new ones)" in done

    def test_offboard_from_the_admin_needs_the_confirmation(self) -> None:
        memory_remember(actor=self.bob, content="Private note.", workspace="personal")
        url = f"/admin/grants/member/{self.bob.pk}/offboard/"
        page = self.admin.get(url)
        assert b"Memories in their personal layer: 1" in page.content
        unconfirmed = self.admin.post(url, {"builds": "cancel", "send_export": "on"})
        assert unconfirmed.status_code == 200
        assert b"Tick this box" in unconfirmed.content
        assert Memory.objects.filter(author=self.bob).count() == 1
        done = self.admin.post(url, {"builds": "cancel", "send_export": "on", "confirm": "on"})
        assert done.status_code == 302
        assert not Memory.objects.filter(author=self.bob).exists()

    def test_lifecycle_views_are_for_administrators_only(self) -> None:
        member = Client()
        member.force_login(self.alice.user)
        for url in (
            "/admin/grants/member/invite/",
            f"/admin/grants/member/{self.bob.pk}/suspend/",
            f"/admin/grants/member/{self.bob.pk}/offboard/",
        ):
            assert member.post(url, {"builds": "cancel", "confirm": "on"}).status_code in (302, 403), url
        assert Member.objects.get(pk=self.bob.pk).is_active


class SecurityPageTests(BrainTestCase):
    def test_a_member_sees_and_ends_their_sessions_and_tokens(self) -> None:
        laptop = signed_in("bob", "pw-bob-12345")
        phone = signed_in("bob", "pw-bob-12345")
        _, raw = api_token_issue(actor=self.bob, name="laptop CLI")
        page = laptop.get("/account/security/").content.decode()
        assert "this browser" in page
        assert "laptop CLI" in page
        other = SignedInSession.objects.filter(user=self.bob.user).exclude(session_id=laptop.session.session_key).get()
        assert laptop.post("/account/security/", {"end": str(other.public_id)}).status_code == 302
        assert not is_signed_in(phone)
        assert is_signed_in(laptop)
        token = MemoryApiToken.objects.get(member=self.bob)
        laptop.post("/account/security/", {"revoke_token": token.pk})
        assert self.client.get("/api/memory/count", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401

    def test_sign_out_everywhere_else_and_no_reach_into_another_persons_sessions(self) -> None:
        laptop = signed_in("bob", "pw-bob-12345")
        signed_in("bob", "pw-bob-12345")
        alice = signed_in("alice", "pw-alice-123")
        alices = SignedInSession.objects.get(user=self.alice.user)
        assert laptop.post("/account/security/", {"end": str(alices.public_id)}).status_code == 404
        assert laptop.post("/account/security/", {"end": "not-a-uuid"}).status_code == 404
        assert is_signed_in(alice)
        laptop.post("/account/security/", {"end_others": "1"})
        assert SignedInSession.objects.filter(user=self.bob.user).count() == 1
        assert is_signed_in(laptop)
        assert Session.objects.filter(session_key=laptop.session.session_key).exists()

    def test_thousands_of_sessions_list_the_newest_and_this_browser_and_count_the_rest(self) -> None:
        laptop = signed_in("bob", "pw-bob-12345")
        mine = SignedInSession.objects.get(user=self.bob.user)
        SignedInSession.objects.filter(pk=mine.pk).update(last_seen_at=mine.last_seen_at - dt.timedelta(days=3))
        for _ in range(SESSIONS_SHOWN + 10):
            signed_in("bob", "pw-bob-12345")
        page = laptop.get("/account/security/").content.decode()
        assert page.count('name="end" value=') == SESSIONS_SHOWN + 1  # the newest, and this browser
        assert "this browser" in page
        assert "And 10 older sessions not listed" in page
        laptop.post("/account/security/", {"end_others": "1"})
        assert SignedInSession.objects.filter(user=self.bob.user).count() == 1

    def test_an_expired_session_is_not_listed_and_the_daily_task_removes_it(self) -> None:
        import datetime as dt

        from django.utils import timezone

        from accounts.tasks import clear_sessions_task

        forgotten = signed_in("bob", "pw-bob-12345")
        laptop = signed_in("bob", "pw-bob-12345")
        expired = timezone.now() - dt.timedelta(days=30)
        Session.objects.filter(session_key=forgotten.session.session_key).update(expire_date=expired)
        listed = laptop.get("/account/security/").context["sessions"]
        assert [entry.session_id for entry in listed] == [laptop.session.session_key]
        admin = Client()
        admin.force_login(self.charlie.user)
        shown = admin.get(f"/admin/grants/member/{self.bob.pk}/change/").content.decode()
        assert shown.count("last seen") == 1
        clear_sessions_task()
        assert list(SignedInSession.objects.filter(user=self.bob.user).values_list("session_id", flat=True)) == [
            laptop.session.session_key
        ]
        assert is_signed_in(laptop)

    def test_sessions_are_named_by_browser_and_system(self) -> None:
        firefox = Client(
            HTTP_USER_AGENT="Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
        )
        firefox.post("/login/", {"username": "bob", "password": "pw-bob-12345"})
        page = firefox.get("/account/security/").content.decode()
        assert "Firefox on Windows" in page
        assert "this browser" in page

    def test_api_calls_do_not_touch_the_session_register(self) -> None:
        _, raw = api_token_issue(actor=self.bob, name="cli")
        response = self.client.get("/api/memory/count", HTTP_AUTHORIZATION=f"Bearer {raw}")
        assert "Cookie" not in response.get("Vary", "")
        assert not SignedInSession.objects.exists()
        assert not BuildCredential.objects.exists()


class CommandTests(BrainTestCase):
    def run_command(self, *args: str) -> str:
        from io import StringIO

        from django.core.management import call_command

        out = StringIO()
        call_command("brain_people", *args, stdout=out)
        return out.getvalue()

    def test_invite_suspend_reactivate_offboard_from_the_console(self) -> None:
        from django.core.management.base import CommandError

        assert "link sent to erin@example.com" in self.run_command("invite", "erin", "--email", "erin@example.com")
        assert "sessions 0" in self.run_command("suspend", "bob")
        assert "reactivated bob" in self.run_command("reactivate", "bob")
        with pytest.raises(CommandError, match="--yes"):
            self.run_command("offboard", "bob")
        assert "offboarded bob" in self.run_command("offboard", "bob", "--yes", "--no-export")
        with pytest.raises(CommandError, match="already been offboarded"):
            self.run_command("offboard", "bob", "--yes")
        with pytest.raises(CommandError, match="no member named"):
            self.run_command("suspend", "nobody")


class OwnCredentialTests(BrainTestCase):
    def test_a_member_revokes_their_own_question_and_build_credentials_only(self) -> None:
        laptop = signed_in("bob", "pw-bob-12345")
        question, raw_question = question_credential_issue(actor=SYSTEM, name="standup bot", member=self.bob)
        alices, _ = question_credential_issue(actor=SYSTEM, name="alice bot", member=self.alice)
        build = build_open(actor=self.bob, title="Bob's edits")
        credential, raw_build = build_credential_issue(actor=self.bob, build=build)
        page = laptop.get("/account/security/").content.decode()
        assert "standup bot" in page
        assert "Bob&#x27;s edits" in page or "Bob's edits" in page
        assert "alice bot" not in page
        assert laptop.post("/account/security/", {"revoke_question_credential": alices.pk}).status_code == 404
        assert laptop.post("/account/security/", {"revoke_question_credential": question.pk}).status_code == 302
        assert laptop.post("/account/security/", {"revoke_build_credential": credential.pk}).status_code == 302
        for raw, path in ((raw_question, "/api/mcp"), (raw_build, "/api/build/mcp")):
            status = self.client.post(
                path, data=MCP_LIST, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}"
            ).status_code
            assert status == 401, path

    def test_a_member_without_a_password_is_told_why_there_is_none_to_change(self) -> None:
        dora = Member.objects.get(pk=member_create(actor=SYSTEM, username="dora").pk)  # no password: SSO only
        browser = Client()
        browser.force_login(dora.user)
        page = browser.get("/account/password/").content.decode()
        assert "You have no Brain password" in page
        assert 'name="old_password"' not in page

    def test_a_password_change_keeps_this_session_registered_and_lists_no_ended_one(self) -> None:
        phone = signed_in("bob", "pw-bob-12345")
        laptop = signed_in("bob", "pw-bob-12345")
        before = laptop.session.session_key
        changed = laptop.post(
            "/account/password/",
            {
                "old_password": "pw-bob-12345",
                "new_password1": "amber field 33 kite",
                "new_password2": "amber field 33 kite",
            },
        )
        assert changed.status_code == 302
        assert "Your 1 other session ended." in laptop.get("/account/security/").content.decode()
        assert laptop.session.session_key != before  # Django cycles the key
        assert is_signed_in(laptop)
        assert not is_signed_in(phone)
        # The Security page lists only what is still signed in: the phone's entry went with it.
        (entry,) = SignedInSession.objects.filter(user=self.bob.user)
        assert entry.session_id == laptop.session.session_key
        assert AuditEvent.objects.filter(action="member.password_change", target="bob").exists()
