"""The register of signed-in sessions: recorded at sign-in, refreshed as used, ended on demand.

Django keeps sessions by key only; to list "where am I signed in" and to end every session
of a suspended person, each session of a signed-in user is registered here. Registration
happens on ``user_logged_in`` and again, at most every ``TOUCH_EVERY``, from the middleware,
which also re-registers a session whose key was cycled (a password change) — so the
register costs no query on most requests.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.contrib.auth.signals import user_logged_in
from django.contrib.sessions.models import Session
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from accounts.models import SignedInSession
from brain.client_ip import client_ip
from brain.text.secrets import redact

TOUCH_EVERY = dt.timedelta(minutes=5)
_SEEN_KEY = "_brain_seen"
_VIA_KEY = "_brain_via"
_KEY_KEY = "_brain_registered_key"  # the session key the register holds (a cycled key differs)


def _stamp() -> str:
    return timezone.now().isoformat()


def register(request: HttpRequest, user: Any, *, via: str | None = None) -> None:
    """Record (or refresh) the current session of ``user`` in the register."""
    session = request.session
    if session.session_key is None:
        session.save()
    if not Session.objects.filter(session_key=session.session_key).exists():
        return  # not a database session (another SESSION_ENGINE): nothing to register against
    if via is not None:
        session[_VIA_KEY] = via
    # A header the client chose, kept for the person to recognise their browser: masked like a log line.
    agent = redact(str(request.META.get("HTTP_USER_AGENT", ""))[:255])[:255]
    address = client_ip(request) or None
    now = timezone.now()
    SignedInSession.objects.update_or_create(
        session_id=session.session_key,
        defaults={"user": user, "last_seen_at": now, "ip": address, "user_agent": agent,
                  "via": str(session.get(_VIA_KEY, "password"))},
    )  # fmt: skip
    session[_SEEN_KEY] = now.isoformat()
    session[_KEY_KEY] = session.session_key


@receiver(user_logged_in, dispatch_uid="accounts.register_session")
def _on_sign_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if request is None or not hasattr(request, "session"):
        return
    backend = str(getattr(user, "backend", ""))
    register(request, user, via="sso" if "oidc" in backend.lower() else "password")


class SessionActivityMiddleware:
    """Refresh the register entry of a signed-in request's session at most every ``TOUCH_EVERY``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        if session is None or not session.accessed or response.status_code >= 500:
            # The request never read its session (a bearer-token API call): reading it now would
            # only add "Vary: Cookie" to a response that does not depend on one. A failed one
            # (the database down: 503) has nothing to refresh, and reading the user would fail again.
            return response
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            seen = session.get(_SEEN_KEY)
            try:
                stale = seen is None or timezone.now() - dt.datetime.fromisoformat(seen) >= TOUCH_EVERY
            except (TypeError, ValueError):
                stale = True
            # A password change cycles the key (and the register entry went with the old one).
            stale = stale or session.get(_KEY_KEY) != session.session_key
            if stale and not session.is_empty():
                register(request, user)
        return response


def end_session(session: SignedInSession) -> None:
    """End one session: its Django session row goes, and the register entry with it."""
    Session.objects.filter(session_key=session.session_id).delete()


def end_other_sessions(request: HttpRequest) -> int:
    """After a password change: keep this browser's session (registered again under the key
    Django just cycled it to), end every other one, and return how many those were."""
    previous = request.session.get(_KEY_KEY)
    register(request, request.user)
    if previous and previous != request.session.session_key:
        SignedInSession.objects.filter(session_id=previous).delete()  # this browser, under its old key
    return end_all_sessions(request.user, keep=request.session.session_key)


def end_all_sessions(user: Any, *, keep: str | None = None) -> int:
    """End every registered session of ``user`` except the one keyed ``keep``; returns how many."""
    entries = SignedInSession.objects.filter(user=user)
    if keep:
        entries = entries.exclude(session_id=keep)
    keys = list(entries.values_list("session_id", flat=True))
    Session.objects.filter(session_key__in=keys).delete()
    return len(keys)
