"""The sign-in backend: Django's own, finding the login by its name as people read it, and
loading the member with the user on every request.

Every signed-in page asks who the member behind the user is (``principal_for_user``); reading
both in one query saves a round trip on each request.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

from brain.logins import MAX_USERNAME, login_named


class MemberBackend(ModelBackend):
    """``ModelBackend`` whose ``get_user`` joins the user's member (absent for a bare login)."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        """Sign-in by the name as people read it (``Alice``, ``ALICE``: alice), as names are
        unique: Django's own lookup is exact, and refused the right password typed so."""
        if username is not None and len(username) <= MAX_USERNAME:
            login = login_named(username)
            if login is not None:
                username = login.get_username()
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id: Any) -> Any:
        User = get_user_model()
        try:
            user = User._default_manager.select_related("member").get(pk=user_id)
        except User.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
