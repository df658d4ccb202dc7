"""DRF adapters over ``brain.callers``: authentication, the surface permission, the rate windows.

Thin on purpose: who a credential belongs to and what each surface requires are decided in
``brain.callers``; these classes only put the answer where DRF expects it (``request.auth``
is the ``Caller``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from brain.callers import ALL_SCOPES, SESSION, SURFACES, Caller, admits, bearer_token, refusal_reason, resolve
from brain.ratelimit import RateLimited, hit
from grants.models import Member
from grants.principals import principal_for_user


class BearerAuthentication(BaseAuthentication):
    """Any bearer credential kind; an unknown, expired or revoked one is a 401 (one message for all)."""

    def authenticate(self, request: Request) -> tuple[Any, Caller] | None:
        raw = bearer_token(request._request)
        if raw is None:
            return None
        caller = resolve(raw)
        if caller is None:
            raise AuthenticationFailed("The credential is unknown, expired or revoked.")
        user = caller.principal.user if isinstance(caller.principal, Member) else AnonymousUser()
        return user, caller

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="brain"'


class SessionCallerAuthentication(SessionAuthentication):
    """A signed-in browser (CSRF-checked on unsafe methods) acts with every scope of its member."""

    def authenticate(self, request: Request) -> tuple[Any, Caller] | None:
        found = super().authenticate(request)
        if found is None:
            return None
        member = principal_for_user(found[0])
        if member is None:
            return None
        return found[0], Caller(principal=member, kind=SESSION, scopes=ALL_SCOPES)


class SurfacePermission(BasePermission):
    """The view's ``surface`` row must admit the caller: 401 without a credential, 403 with the wrong one."""

    def has_permission(self, request: Request, view: Any) -> bool:
        caller = request.auth
        if not isinstance(caller, Caller):
            return False
        surface = SURFACES[view.surface]
        if admits(surface, caller):
            return True
        raise PermissionDenied(refusal_reason(surface, caller), code="insufficient_scope")


class RateWindowThrottle(BaseThrottle):
    """The per-person Redis windows shared with MCP and the web (``brain.ratelimit``)."""

    def __init__(self) -> None:
        self.retry_after = 0

    def allow_request(self, request: Request, view: Any) -> bool:
        caller = request.auth
        if not isinstance(caller, Caller):
            return True
        try:
            hit(principal_key=caller.rate_key, rate_class=view.rate_class_for(request.method))
        except RateLimited as limited:
            self.retry_after = limited.retry_after
            return False
        return True

    def wait(self) -> float:
        return float(self.retry_after)
