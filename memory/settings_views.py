"""The Memory settings page: a member's capture defaults and weekly insights, and the team's.

Everyone edits their own; the team section is shown to everyone (so they know what applies)
and changed only by an administrator. Both go through ``memory.preferences``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from grants.decorators import limited_view
from grants.models import Member
from memory.models import InsightDelivery, Workspace
from memory.preferences import memory_preferences_save, preferences_of, team_memory_settings_save, team_settings
from memory.services import capture_defaults
from memory.views import REFUSALS, member_view, typed_back


@require_http_methods(["GET", "POST"])
@limited_view("write")
@member_view
def memory_settings(request: HttpRequest, member: Member) -> HttpResponseBase:
    if request.method == "GET":
        return _page(request, member)
    team = request.POST.get("form") == "team"
    try:
        if team:
            team_memory_settings_save(
                actor=member,
                default_workspace=request.POST.get("default_workspace", ""),
                default_tags=request.POST.get("default_tags", ""),
                shared_insights=request.POST.get("shared_insights") == "on",
            )
        else:
            memory_preferences_save(
                actor=member,
                default_workspace=request.POST.get("default_workspace", ""),
                default_tags=request.POST.get("default_tags", ""),
                weekly_insights=request.POST.get("weekly_insights") == "on",
                insights_delivery=request.POST.get("insights_delivery", InsightDelivery.DASHBOARD),
            )
    except REFUSALS as refused:
        # The page again with the tags as typed, beside why not (a redirect emptied the form).
        messages.error(request, str(refused) or "You may not do this.")
        status = 403 if isinstance(refused, PermissionDenied) else 400
        typed = {"team" if team else "mine": typed_back(request.POST) or {"default_tags": ""}}
        return _page(request, member, typed=typed, status=status)
    messages.success(request, "Team memory settings saved." if team else "Your memory settings are saved.")
    return redirect("memory:settings")


def _page(
    request: HttpRequest, member: Member, *, typed: dict[str, Any] | None = None, status: int = 200
) -> HttpResponse:
    context = {
        "typed": typed or {},
        "preference": preferences_of(member),
        "team": team_settings(),
        "effective": capture_defaults(member),
        "layers": Workspace.choices,
        "deliveries": InsightDelivery.choices,
        "may_edit_team": member.is_administrator,
    }
    return render(request, "memory/settings.html", context, status=status)
