"""The home page: what needs the signed-in member, in one place; the introduction otherwise."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from grants.principals import principal_for_user
from home.selectors import home_for


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """Signed in: what needs me (``home.selectors``). Otherwise the short introduction and sign-in."""
    member = principal_for_user(request.user) if request.user.is_authenticated else None
    if member is None:
        return render(request, "brain/home.html", {"home": None, "is_superuser": request.user.is_superuser})
    return render(request, "brain/home.html", {"home": home_for(member), "is_superuser": request.user.is_superuser})
