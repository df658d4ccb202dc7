"""Integration secrets in the admin: set or replace a value, never see it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from brain.forms import forget_typed
from brain.text.secrets import refused
from grants.admin import AdministratorOnly, admin_actor
from integrations.models import IntegrationSecret
from integrations.secrets import secret_set, storage_problem, validate_secret_name


class SecretForm(forms.ModelForm):
    value = forms.CharField(
        widget=forms.PasswordInput(render_value=False), help_text="Write-only: it is never shown again."
    )

    class Meta:
        model = IntegrationSecret
        fields = ["name"]

    def clean_name(self) -> str:
        name = str(self.cleaned_data.get("name") or "")
        try:
            validate_secret_name(name)
        except ValueError as exc:
            if refused(name):
                forget_typed(self, "name")  # never shown again in the page
            raise forms.ValidationError(str(exc)) from None
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        problem = storage_problem()
        if problem:
            raise forms.ValidationError(problem)
        return cleaned


@admin.register(IntegrationSecret)
class IntegrationSecretAdmin(AdministratorOnly, admin.ModelAdmin):
    form = SecretForm
    list_display = ["name", "key_version", "updated_at", "updated_by"]
    list_select_related = ["updated_by__user"]  # who set each secret: read with the rows
    readonly_fields = ["key_version", "updated_at", "updated_by"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A secret is replaced, never renamed: renaming on its change page stored a second row.
        return [*self.readonly_fields, *(["name"] if obj else [])]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # Through the one write path: encrypted, audited by name only.
        name = form.cleaned_data.get("name") or obj.name
        secret_set(actor=admin_actor(request), name=name, value=form.cleaned_data["value"])
        obj.pk = IntegrationSecret.objects.get(name=name).pk
