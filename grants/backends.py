"""The sign-in backend: Django's own, loading the member with the user on every request.

Every signed-in page asks who the member behind the user is (``principal_for_user``); reading
both in one query saves a round trip on each request.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class MemberBackend(ModelBackend):
    """``ModelBackend`` whose ``get_user`` joins the user's member (absent for a bare login)."""

    def get_user(self, user_id: Any) -> Any:
        User = get_user_model()
        try:
            user = User._default_manager.select_related("member").get(pk=user_id)
        except User.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
