"""Sign-in throttling (django-axes): repeated failures pause one username from one address."""

from __future__ import annotations

import secrets
from typing import Any
from unittest import mock

from django.contrib.auth import get_user_model
from django.test import TestCase, override_settings

from grants.principals import SYSTEM
from grants.services import member_create

PASSWORD = "a-long-enough-password"


class SignInThrottleTests(TestCase):
    def setUp(self) -> None:
        member = member_create(actor=SYSTEM, username="alice")
        user = get_user_model().objects.get(pk=member.user_id)
        user.set_password(PASSWORD)
        user.save()

    def sign_in(self, password: str, address: str = "203.0.113.7", username: str = "alice", **headers: Any):
        return self.client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address, **headers)

    def test_ten_failures_pause_that_user_from_that_address_even_with_the_right_password(self) -> None:
        for _ in range(9):
            assert self.sign_in("wrong").status_code == 200  # the form again, with its error
        paused = self.sign_in("wrong")
        assert paused.status_code == 429
        assert "paused for 15 minutes" in " ".join(paused.content.decode().split())
        assert self.sign_in(PASSWORD).status_code == 429
        assert "_auth_user_id" not in self.client.session

        # Elsewhere, the same person still signs in: nobody can lock a colleague out.
        assert self.sign_in(PASSWORD, address="198.51.100.20").status_code == 302

    def test_a_name_signs_in_however_it_is_capitalised_and_its_failures_count_as_one(self) -> None:
        """Names are unique as people read them; sign-in was exact ("Alice" + the right password:
        "didn't match"), and each spelling had its own ten tries."""
        for spelling in ("Alice", "ALICE", "alice"):
            assert self.sign_in(PASSWORD, username=spelling).status_code == 302, spelling
            assert self.client.session["_auth_user_id"] == str(get_user_model().objects.get(username="alice").pk)
            self.client.logout()
        straße = member_create(actor=SYSTEM, username="straße")
        user = get_user_model().objects.get(pk=straße.user_id)
        user.set_password(PASSWORD)
        user.save()
        assert self.sign_in(PASSWORD, username="STRASSE").status_code == 302
        self.client.logout()
        for index in range(10):
            self.sign_in("wrong", username=("Alice", "aLICE", "ALICE", "alice")[index % 4])
        assert self.sign_in(PASSWORD, username="alice").status_code == 429

    def test_one_ipv6_subscriber_is_one_address_and_a_reset_password_unpauses(self) -> None:
        # Rotating through one /64 (2^64 addresses a subscriber holds) used to be unlimited.
        for host in range(10):
            self.sign_in("wrong", address=f"2001:db8:5:7::{host + 1:x}")
        assert self.sign_in(PASSWORD, address="2001:db8:5:7::ffff").status_code == 429
        assert self.sign_in(PASSWORD, address="2001:db8:5:8::1").status_code == 302  # another subscriber
        self.client.logout()
        # The pause page says to ask an administrator for a new password: setting one unpauses.
        from grants.services import password_set_by_administrator

        password_set_by_administrator(actor=SYSTEM, user=get_user_model().objects.get(username="alice"))
        assert self.sign_in(PASSWORD, address="2001:db8:5:7::ffff").status_code == 302

    def test_a_key_typed_as_the_username_is_kept_redacted_with_the_failed_attempt(self) -> None:
        """People paste keys into the wrong box: the attempt record kept it in clear, listed to
        administrators under Access attempts (the username column and the form data)."""
        from axes.models import AccessAttempt

        key = "AKIA" + "Q3ZXVB7TR2LMN4PK"
        for path in ("/login/", "/admin/login/"):
            self.client.post(path, {"username": key, "password": "wrong"}, REMOTE_ADDR="203.0.113.9")
        self.sign_in("wrong")
        kept = list(AccessAttempt.objects.values_list("username", "post_data"))
        assert len(kept) == 2  # the key's two attempts share one record
        assert not any(key in username or key in data for username, data in kept), kept
        assert "alice" in [username for username, _ in kept]  # an ordinary name is kept as typed

    def test_a_username_past_its_length_is_a_form_error_not_a_server_error(self) -> None:
        self.client.raise_request_exception = False
        for path in ("/login/", "/admin/login/"):
            for length in (151, 256, 5000):
                with self.subTest(path=path, length=length):
                    response = self.client.post(
                        path, {"username": "a" * length, "password": "x"}, REMOTE_ADDR="203.0.113.8"
                    )
                    assert response.status_code == 200, response.status_code
                    assert response.context["form"].errors["username"], response.context["form"].errors
        from axes.models import AccessAttempt

        assert not AccessAttempt.objects.filter(username__startswith="aaaa").exists()  # never tried

    def test_a_success_clears_the_count(self) -> None:
        for _ in range(9):
            self.sign_in("wrong")
        assert self.sign_in(PASSWORD).status_code == 302
        self.client.logout()
        for _ in range(9):
            assert self.sign_in("wrong").status_code == 200

    def test_the_admin_sign_in_is_throttled_too(self) -> None:
        for _ in range(10):
            self.client.post("/admin/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR="203.0.113.9")
        response = self.client.post(
            "/admin/login/", {"username": "alice", "password": PASSWORD}, REMOTE_ADDR="203.0.113.9"
        )
        assert response.status_code == 429

    def test_attempts_under_ever_new_usernames_stop_at_the_addresss_cap_before_any_password_hash(self) -> None:
        # Each attempt runs the password hasher, for an unknown username too; axes pauses one
        # username from an address, so new names every time were never paused.
        from django.contrib.auth import base_user

        from tests.base import start_of_fresh_rate_window

        start_of_fresh_rate_window()
        for path in ("/login/", "/admin/login/"):
            address, elsewhere = (f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}::1" for _ in range(2))
            with (
                self.subTest(path=path),
                self.settings(BRAIN_MCP_RATE_LIMITS={"signin": 2}),
                mock.patch.object(base_user, "make_password", wraps=base_user.make_password) as hashed,
                mock.patch.object(base_user, "check_password", wraps=base_user.check_password) as checked,
            ):
                answers = [
                    self.client.post(path, {"username": f"nobody-{secrets.token_hex(4)}", "password": "x"},
                                     REMOTE_ADDR=address)
                    for _ in range(3)
                ]  # fmt: skip
                assert [answer.status_code for answer in answers] == [200, 200, 429]
                assert 1 <= int(answers[2]["Retry-After"]) <= 60
                assert "Too many sign-in attempts" in answers[2].content.decode()
                assert hashed.call_count + checked.call_count == 2  # the third was never hashed
                assert self.sign_in(PASSWORD, address=elsewhere).status_code == 302  # another address
                self.client.logout()

    @override_settings(BRAIN_TRUSTED_PROXY_COUNT=1)
    def test_behind_a_trusted_proxy_the_forwarded_client_address_counts(self) -> None:
        proxy = "10.0.0.2"
        for _ in range(10):
            self.sign_in("wrong", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.50")
        assert self.sign_in(PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.50").status_code == 429
        # Another client behind the same proxy is not paused.
        assert self.sign_in(PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="198.51.100.9").status_code == 302


class ClientAddressTests(TestCase):
    def address(self, forwarded: str | None, proxies: int) -> str:
        from django.test import RequestFactory

        from brain.client_ip import client_ip

        headers: dict[str, Any] = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
        with override_settings(BRAIN_TRUSTED_PROXY_COUNT=proxies):
            return client_ip(RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", **headers))

    def test_the_forwarded_header_is_read_only_as_far_as_trusted_proxies_wrote_it(self) -> None:
        assert self.address("203.0.113.5", proxies=0) == "10.0.0.2"  # no proxy trusted: the peer
        assert self.address("203.0.113.5", proxies=1) == "203.0.113.5"
        assert self.address("6.6.6.6, 203.0.113.5", proxies=1) == "203.0.113.5"  # a claim is ignored
        assert self.address("6.6.6.6, 203.0.113.5, 10.0.0.1", proxies=2) == "203.0.113.5"
        assert self.address("203.0.113.5", proxies=2) == "10.0.0.2"  # fewer entries than proxies
        assert self.address("not-an-address", proxies=1) == "10.0.0.2"
        assert self.address(None, proxies=1) == "10.0.0.2"


class SpellingsShareOneCountTests(TestCase):
    """Sign-in finds a login by its name in any spelling PostgreSQL or Unicode folds together;
    the failures count against that login, whatever was typed."""

    def member(self, username: str) -> None:
        member = member_create(actor=SYSTEM, username=username)
        user = get_user_model().objects.get(pk=member.user_id)
        user.set_password(PASSWORD)
        user.save()

    def sign_in(self, password: str, username: str) -> Any:
        return self.client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR="203.0.113.7")

    def test_a_dotless_i_is_no_second_set_of_tries(self) -> None:
        """PostgreSQL's case-insensitive match finds "alıce" as alice; keyed by Python's case
        folding ("alıce" stays itself) each such spelling had ten more guesses."""
        self.member("alice")
        for _ in range(10):
            self.sign_in("wrong", "alice")
        assert self.sign_in(PASSWORD, "alice").status_code == 429
        assert self.sign_in(PASSWORD, "al\u0131ce").status_code == 429

    def test_a_new_password_lifts_the_pause_of_a_capitalised_name(self) -> None:
        from grants.services import password_set_by_administrator

        self.member("Bob")
        for _ in range(10):
            self.sign_in("wrong", "bob")
        assert self.sign_in(PASSWORD, "Bob").status_code == 429
        password_set_by_administrator(actor=SYSTEM, user=get_user_model().objects.get(username="Bob"))
        assert self.sign_in(PASSWORD, "BOB").status_code == 302
