"""Project-level pages that belong to no app."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """Signed in: what needs me (``brain.home``). Otherwise the short introduction and sign-in."""
    from brain.home import home_for
    from grants.principals import principal_for_user

    member = principal_for_user(request.user) if request.user.is_authenticated else None
    if member is None:
        return render(request, "brain/home.html", {"home": None, "is_superuser": request.user.is_superuser})
    return render(request, "brain/home.html", {"home": home_for(member), "is_superuser": request.user.is_superuser})


def sign_in_paused(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """django-axes' lockout response: 429, saying for how long, naming no account state."""
    from django.conf import settings

    minutes = max(1, int(settings.AXES_COOLOFF_TIME.total_seconds() // 60))
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    return render(request, "registration/locked_out.html", context, status=429)
