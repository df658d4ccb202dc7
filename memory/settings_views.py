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

from brain.inputs import typed_back
from grants.decorators import limited_view
from grants.models import Member
from memory.models import InsightDelivery, MemoryPreference, TeamMemorySettings, Workspace
from memory.preferences import memory_preferences_save, preferences_of, team_memory_settings_save, team_settings
from memory.services import capture_defaults
from memory.views import REFUSALS, member_view


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
        # The page again with every field as typed, beside why not (a redirect emptied the form).
        messages.error(request, str(refused) or "You may not do this.")
        status = 403 if isinstance(refused, PermissionDenied) else 400
        return _page(request, member, typed={"team" if team else "mine": _typed(request)}, status=status)
    messages.success(request, "Team memory settings saved." if team else "Your memory settings are saved.")
    return redirect("memory:settings")


def _typed(request: HttpRequest) -> dict[str, Any]:
    """A refused form's fields as typed, in ``_saved``'s shape: a value holding a secret comes
    back empty (``typed_back`` never echoes one); an unticked box is absent from a POST."""
    kept = typed_back(request.POST)
    return {
        "default_workspace": kept.get("default_workspace", ""),
        "default_tags": kept.get("default_tags", ""),
        "weekly_insights": kept.get("weekly_insights") == "on",
        "insights_delivery": kept.get("insights_delivery", ""),
        "shared_insights": kept.get("shared_insights") == "on",
    }


def _saved(preference: MemoryPreference, team: TeamMemorySettings) -> dict[str, dict[str, Any]]:
    """The saved rows as their forms show them (the tags as one comma-separated line)."""
    return {
        "mine": {
            "default_workspace": preference.default_workspace,
            "default_tags": ", ".join(preference.default_tags),
            "weekly_insights": preference.weekly_insights,
            "insights_delivery": preference.insights_delivery,
        },
        "team": {
            "default_workspace": team.default_workspace,
            "default_tags": ", ".join(team.default_tags),
            "shared_insights": team.shared_insights,
        },
    }


def _page(
    request: HttpRequest, member: Member, *, typed: dict[str, Any] | None = None, status: int = 200
) -> HttpResponse:
    """The settings page; ``typed`` (``{"mine" or "team": _typed(...)}``) is a refused form,
    shown again in place of what is saved."""
    team = team_settings()
    context = {
        "forms": {**_saved(preferences_of(member), team), **(typed or {})},
        "team": team,
        "effective": capture_defaults(member),
        "layers": Workspace.choices,
        "deliveries": InsightDelivery.choices,
        "may_edit_team": member.is_administrator,
    }
    return render(request, "memory/settings.html", context, status=status)
