"""Sign-in forms (the site's and the admin's) whose username is bounded before anyone checks it.

Django's ``AuthenticationForm`` sets the username field's ``max_length`` (150) after the field's
validators were built, so it is shown, not enforced: a 256-character name went on to
``authenticate`` and to django-axes, whose failure record (255 characters) raised a database
error — a 500 on the sign-in page. Here the bound is a validator: a longer name is a form
error, never a sign-in attempt.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator
from django.http import HttpRequest

from brain.logins import MAX_USERNAME, login_named
from brain.text.secrets import redact


class _BoundedUsername:
    fields: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        field = self.fields["username"]
        field.validators.append(MaxLengthValidator(field.max_length or 150))


class SignInForm(_BoundedUsername, AuthenticationForm):
    """The sign-in page's form."""


class AdminSignInForm(_BoundedUsername, AdminAuthenticationForm):
    """The admin's sign-in form."""


def attempted_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """The username a failed sign-in tried, as django-axes keys and keeps it
    (``AXES_USERNAME_CALLABLE``): redacted when it holds a secret — a key pasted into the
    wrong box was kept in clear and listed to administrators as an access attempt."""
    typed = credentials if credentials else getattr(request, "data", request.POST)
    username = typed.get("username")
    if not username:
        return username
    # Counted against the login the name means: sign-in finds "Alice" or "alıce" as alice, so
    # every spelling shares alice's ten tries (and a new password, set for "alice", lifts the
    # pause whatever was typed). A name that is no one's counts as typed, case-folded.
    login = login_named(str(username)) if len(str(username)) <= MAX_USERNAME else None
    return str(login.get_username()) if login is not None else redact(str(username)).casefold()
