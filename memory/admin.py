"""The team's memory settings in the admin (memories themselves are not here: a personal
layer is its author's alone, administrators included)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from brain.forms import forget_typed
from brain.text.secrets import refused
from grants.admin import AdministratorOnly, admin_actor
from memory.models import TeamMemorySettings
from memory.preferences import team_memory_settings_save, team_settings_problems


class TeamMemorySettingsForm(forms.ModelForm):
    """The service's own checks, run as the form's: a refused value is an error beside its field."""

    class Meta:
        model = TeamMemorySettings
        fields = ["default_workspace", "default_tags", "shared_insights"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        wanted = {field: cleaned[field] for field in ("default_workspace", "default_tags") if field in cleaned}
        if len(wanted) == 2:
            for field, problem in team_settings_problems(**wanted).items():
                self.add_error(field, problem)
                if refused(str(self.data.get(field) or "")):
                    forget_typed(self, field)  # the form shows what was typed again: never a secret
        return cleaned


@admin.register(TeamMemorySettings)
class TeamMemorySettingsAdmin(AdministratorOnly, admin.ModelAdmin):
    """One row: the list page goes straight to it; it can be changed, never added twice or deleted."""

    form = TeamMemorySettingsForm
    fields = ["default_workspace", "default_tags", "shared_insights"]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        TeamMemorySettings.objects.get_or_create(pk=1)
        return HttpResponseRedirect(reverse("admin:memory_teammemorysettings_change", args=[1]))

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # Through the one write path: validated and audited.
        team_memory_settings_save(
            actor=admin_actor(request),
            default_workspace=obj.default_workspace,
            default_tags=obj.default_tags,
            shared_insights=obj.shared_insights,
        )
