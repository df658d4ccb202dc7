"""``member_required``: a web view for a signed-in, active member, who is passed to it.

Anonymous → the sign-in page (Django's ``login_required``); a signed-in user who is not an
active member (no member row, suspended, offboarded) → 404: to them there is nothing here,
the same answer as for a missing page.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponseBase

from grants.models import Member
from grants.principals import principal_for_user

R = TypeVar("R", bound=HttpResponseBase)


def member_required(view: Callable[..., R]) -> Callable[..., R]:
    """Call ``view(request, member, *args, **kwargs)`` with the request's active member."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> R:
        member: Member | None = principal_for_user(request.user)
        if member is None:
            raise Http404
        return view(request, member, *args, **kwargs)

    return wrapped
