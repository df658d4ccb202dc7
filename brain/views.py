"""Project-level pages that belong to no app."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def sign_in_paused(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """django-axes' lockout response: 429, saying for how long, naming no account state."""
    from django.conf import settings

    minutes = max(1, int(settings.AXES_COOLOFF_TIME.total_seconds() // 60))
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    return render(request, "registration/locked_out.html", context, status=429)
