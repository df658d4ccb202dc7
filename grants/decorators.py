"""Web-view decorators that know members: ``member_required`` and ``limited_view``.

``member_required``: a web view for a signed-in, active member, who is passed to it.

Anonymous → the sign-in page, coming back to a page that answers a GET; a signed-in user who
is not an active member (no member row, suspended, offboarded) → 404: to them there is
nothing here, the same answer as for a missing page.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import resolve_url
from django.utils.http import MAX_URL_LENGTH, url_has_allowed_host_and_scheme

from brain.ratelimit import RateLimited, hit, throttled
from grants.models import Member
from grants.principals import principal_for_user

R = TypeVar("R", bound=HttpResponseBase)


def member_required(view: Callable[..., R]) -> Callable[..., R]:
    """Call ``view(request, member, *args, **kwargs)`` with the request's active member.

    A signed-out request goes to the sign-in page with ``next`` set by ``return_to``. A
    signed-out htmx request (a page's part polling or swapping in) is told to load the sign-in
    page whole (``HX-Redirect``): followed as a redirect, the sign-in page was swapped into the
    part — an answer box holding a login form.
    """

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not request.user.is_authenticated:
            back = return_to(request)
            if request.headers.get("HX-Request") == "true":
                response = HttpResponse(status=204)
                response["HX-Redirect"] = f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': back})}"
                return response
            return redirect_to_login(back)
        member: Member | None = principal_for_user(request.user)
        if member is None:
            raise Http404
        return view(request, member, *args, **kwargs)

    return wrapped


def return_to(request: HttpRequest) -> str:
    """Where a signed-out request comes back to once its person has signed in.

    A GET (or HEAD) comes back to itself. Anything else is a form's action, which answers
    only its own method: the browser follows ``next`` with a GET, which got a 405. So it
    comes back to the page the form was on (the ``Referer``, when it is one of ours), else
    home; the person submits the form again from there.

    An address longer than ``MAX_URL_LENGTH`` comes back without its query string (or home):
    the sign-in page drops such a ``next`` anyway, and a redirect carrying 16 KB of it was a
    400 and an error in the log instead of the sign-in page.
    """
    if request.method in ("GET", "HEAD"):
        for candidate in (request.get_full_path(), request.path):
            if len(candidate) <= MAX_URL_LENGTH:
                return candidate
        return str(resolve_url("home"))
    referer = request.headers.get("Referer", "")
    ours = url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    if referer and ours:
        parts = urlsplit(referer)
        if parts.path.startswith("/") and parts.path != resolve_url(settings.LOGIN_URL):
            return parts.path + (f"?{parts.query}" if parts.query else "")
    return str(resolve_url("home"))


_View = TypeVar("_View", bound=Callable[..., HttpResponseBase])


def limited_view(rate_class: str, *, methods: tuple[str, ...] = ("POST",)) -> Callable[[_View], _View]:
    """Rate-limit a signed-in person's web view (for ``methods``) in ``rate_class``.

    The window is the member's, the same as their MCP and REST calls. Over the cap the
    person gets the 429 page (or JSON) with ``Retry-After``; anonymous requests pass through
    to the view's own sign-in handling.
    """

    def decorate(view: _View) -> _View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            member = principal_for_user(request.user) if request.method in methods else None
            if member is not None:
                try:
                    hit(principal_key=f"member:{member.pk}", rate_class=rate_class)
                except RateLimited as limited:
                    return throttled(request, limited, "Too many requests; try again in {seconds} seconds.")
            return view(request, *args, **kwargs)

        return wrapped  # type: ignore[return-value]

    return decorate
