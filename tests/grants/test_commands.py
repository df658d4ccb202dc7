from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from grants.models import Grant, Member


class MemberAndGrantCommandTests(pytest.importorskip("django.test").TestCase):
    def test_member_add_and_grant_add(self) -> None:
        out = io.StringIO()
        call_command(
            "brain_member",
            "add",
            "erin",
            "--email",
            "erin@example.com",
            "--role",
            "admin",
            "--password",
            "pw-erin-1234",
            stdout=out,
        )
        erin = Member.objects.get(user__username="erin")
        assert erin.role == "admin"
        assert erin.user.check_password("pw-erin-1234")
        call_command("brain_grant", "add", "--member", "erin", "--path", "topics/", "--permission", "read", stdout=out)
        call_command(
            "brain_grant", "add", "--member", "erin", "--category", "pricing", "--permission", "approve", stdout=out
        )
        assert Grant.objects.filter(member=erin).count() == 2

    def test_bad_grant_names_the_rule(self) -> None:
        call_command("brain_member", "add", "erin", stdout=io.StringIO())
        with pytest.raises(CommandError, match="uppercase"):
            call_command("brain_grant", "add", "--member", "erin", "--path", "Topics/", "--permission", "read")
        with pytest.raises(CommandError, match="no member named 'nobody'"):
            call_command("brain_grant", "add", "--member", "nobody", "--path", "topics/", "--permission", "read")
        with pytest.raises(CommandError, match="already exists"):
            call_command("brain_member", "add", "erin")
        call_command("brain_grant", "add", "--member", "erin", "--path", "topics/", "--permission", "read")
        with pytest.raises(CommandError, match="erin already holds this grant"):
            call_command("brain_grant", "add", "--member", "erin", "--path", "topics/", "--permission", "read")
