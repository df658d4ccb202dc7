"""The Memory settings page: a member's capture defaults and weekly insights, and the team's.

Everyone edits their own; the team section is shown to everyone (so they know what applies)
and changed only by an administrator. Both go through ``memory.preferences``.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from grants.decorators import limited_view
from grants.models import Member
from memory.models import InsightDelivery, Workspace
from memory.preferences import memory_preferences_save, preferences_of, team_memory_settings_save, team_settings
from memory.services import capture_defaults
from memory.views import member_view


@require_http_methods(["GET", "POST"])
@limited_view("write")
@member_view
def memory_settings(request: HttpRequest, member: Member) -> HttpResponseBase:
    if request.method == "POST":
        if request.POST.get("form") == "team":
            team_memory_settings_save(
                actor=member,
                default_workspace=request.POST.get("default_workspace", ""),
                default_tags=request.POST.get("default_tags", ""),
                shared_insights=request.POST.get("shared_insights") == "on",
            )
            messages.success(request, "Team memory settings saved.")
        else:
            memory_preferences_save(
                actor=member,
                default_workspace=request.POST.get("default_workspace", ""),
                default_tags=request.POST.get("default_tags", ""),
                weekly_insights=request.POST.get("weekly_insights") == "on",
                insights_delivery=request.POST.get("insights_delivery", InsightDelivery.DASHBOARD),
            )
            messages.success(request, "Your memory settings are saved.")
        return redirect("memory:settings")
    context = {
        "preference": preferences_of(member),
        "team": team_settings(),
        "effective": capture_defaults(member),
        "layers": Workspace.choices,
        "deliveries": InsightDelivery.choices,
        "may_edit_team": member.is_administrator,
    }
    return render(request, "memory/settings.html", context)
