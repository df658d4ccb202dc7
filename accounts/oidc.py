"""Optional single sign-on through OpenID Connect, on mozilla-django-oidc.

An identity-provider account is not a member: SSO signs in an existing, active member whose
email matches the provider's verified email claim, exactly one of them. Anyone else gets
the sign-in page with "single sign-on did not match a member" — the provider's people are
invited first, as with passwords. The views answer 404 while SSO is not configured.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from grants.backends import MemberBackend

logger = logging.getLogger(__name__)


class MemberOIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    """Signs in the one active member whose email the provider has verified.

    Stricter than the library's defaults: the ID token must be signed with the configured
    algorithm by a key of the provider's JWKS, name this client as its audience and the
    configured issuer, and carry ``exp``/``iat``/``sub``; an unsigned token is never taken.
    A provider that fails, times out or answers something unverifiable makes a failed
    sign-in (back to the sign-in page), never a server error.
    """

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, requests.RequestException, ValueError) as error:
            logger.warning("single sign-on refused: %s", type(error).__name__)
            if request is not None:
                request.brain_sso_problem = "provider"  # type: ignore[attr-defined]  # for the failure page
            return None

    def get_payload_data(self, token: bytes | str, key: Any) -> dict[str, Any]:
        try:
            payload: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_OP_ISSUER,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
                leeway=30,
            )
        except jwt.InvalidTokenError as error:
            raise SuspiciousOperation(f"ID token refused: {error}") from None
        return payload

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        email = claims.get("email")
        # Only an address the provider states it verified: one that omits the claim may let
        # people choose any address, including a member's.
        return bool(email) and claims.get("email_verified") is True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> QuerySet[Any]:
        User = get_user_model()
        email = str(claims.get("email") or "")
        users = User.objects.filter(email__iexact=email, is_active=True, member__is_active=True)
        if users.count() != 1:
            # None, or several members sharing one address: refuse rather than guess who.
            logger.warning("single sign-on: %s active members match the provider's email", users.count())
            return User.objects.none()
        return users

    def get_user(self, user_id: Any) -> Any:
        # The session names this backend from now on: apply the same rule as password sessions
        # (an inactive, e.g. suspended, user is signed out on their next request).
        return MemberBackend().get_user(user_id)


def _enabled() -> None:
    if not settings.BRAIN_OIDC_ENABLED:
        raise Http404("single sign-on is not configured")


def sign_in(request: HttpRequest) -> HttpResponse:
    """Start single sign-on: redirect to the provider with state, nonce and a PKCE challenge."""
    _enabled()
    response: HttpResponse = OIDCAuthenticationRequestView.as_view()(request)
    return response


class _Callback(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """The library's callback, sending a failed sign-on back with why it failed."""

    @property
    def failure_url(self) -> str:
        # cancelled: the provider sent an error back (the person declined, or it refused them);
        # provider: it answered nothing verifiable or could not be reached; failed: no one
        # active member has the address it vouched for.
        if "error" in self.request.GET:
            return f"{settings.LOGIN_URL}?sso=cancelled"
        if "code" in self.request.GET and "oidc_states" not in self.request.session:
            return f"{settings.LOGIN_URL}?sso=expired"  # no sign-on started in this browser (any more)
        return f"{settings.LOGIN_URL}?sso={getattr(self.request, 'brain_sso_problem', 'failed')}"


def callback(request: HttpRequest) -> HttpResponse:
    """The provider's redirect back: exchange the code, verify the ID token, sign the member in.

    A callback that cannot be matched to the sign-on this browser started (reloaded after it
    finished, opened from history, a state that does not match) goes back to the sign-in page
    saying so, instead of a bare 400.
    """
    _enabled()
    try:
        response: HttpResponse = _Callback.as_view()(request)
    except SuspiciousOperation:
        logger.warning("single sign-on callback refused: no matching sign-on in this browser")
        return HttpResponseRedirect(f"{settings.LOGIN_URL}?sso=expired")
    return response
