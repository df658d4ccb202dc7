"""Git mirrors in the admin: where, as whom, the write-only credential, and what the remote did."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from brain.jobs import enqueue_on_commit
from grants.admin import AdministratorOnly, admin_actor, integer_pk
from integrations.models import IntegrationSecret
from integrations.secrets import storage_problem
from mirror.models import Mirror
from mirror.services import mirror_adopt_remote, mirror_save
from mirror.tasks import mirror_push_task


class MirrorForm(forms.ModelForm):
    credential = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="A token with push access (https remotes) or a deploy key's private key (SSH remotes). "
        "Write-only: stored encrypted, never shown again; leave empty to keep the current one.",
    )

    class Meta:
        model = Mirror
        fields = ["name", "remote_url", "branch", "service_account", "known_hosts", "enabled"]
        widgets = {"known_hosts": forms.Textarea(attrs={"rows": 3})}

    def clean_credential(self) -> str:
        credential = str(self.cleaned_data.get("credential") or "")
        problem = storage_problem() if credential else None
        if problem:
            raise forms.ValidationError(problem)
        return credential


@admin.register(Mirror)
class MirrorAdmin(AdministratorOnly, admin.ModelAdmin):
    form = MirrorForm
    list_display = ["name", "remote_url", "branch", "service_account", "enabled", "state", "pushed_at", "checked_at"]
    list_filter = ["state", "enabled"]
    readonly_fields = ("state", "pushed_sha", "pushed_at", "remote_sha_seen", "checked_at", "last_error")
    actions = ["push_now", "adopt_remote"]
    fieldsets = [
        (None, {"fields": ["name", "remote_url", "branch", "service_account", "credential", "known_hosts", "enabled"]}),
        ("What the remote did", {"fields": readonly_fields}),
    ]

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with transaction.atomic():
            IntegrationSecret.objects.filter(name=obj.secret_name).delete()  # its credential goes with it
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Mirror]) -> None:
        with transaction.atomic():
            IntegrationSecret.objects.filter(name__in=[mirror.secret_name for mirror in queryset]).delete()
            super().delete_queryset(request, queryset)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # Through the one write path: validated, the credential encrypted, audited.
        mirror_save(actor=admin_actor(request), mirror=obj, credential=form.cleaned_data.get("credential") or "")
        enqueue_on_commit(mirror_push_task, obj.pk)

    def change_view(self, request: HttpRequest, object_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        pk = integer_pk(object_id)
        mirror = Mirror.objects.filter(pk=pk).first() if pk is not None else None
        if mirror is not None and request.method == "GET":
            if mirror.state == Mirror.State.MOVED:
                messages.warning(
                    request,
                    f"The remote branch moved ({mirror.last_error}). Nothing was overwritten. Look at the "
                    "branch; to carry on from it, use the action “Adopt the remote branch” on the list.",
                )
            elif mirror.state == Mirror.State.FAILING:
                messages.error(request, f"The last push failed: {mirror.last_error}")
        return super().change_view(request, object_id, *args, **kwargs)

    @admin.action(description="Push now")
    def push_now(self, request: HttpRequest, queryset: QuerySet[Mirror]) -> None:
        for mirror in queryset:
            enqueue_on_commit(mirror_push_task, mirror.pk)
        self.message_user(request, f"Queued {queryset.count()} mirror push(es); their state updates here.")

    @admin.action(description="Adopt the remote branch (after a move) and carry on from it")
    def adopt_remote(self, request: HttpRequest, queryset: QuerySet[Mirror]) -> None:
        actor = admin_actor(request)
        for mirror in queryset:
            try:
                mirror_adopt_remote(actor=actor, mirror=mirror)
            except ValueError as exc:
                self.message_user(request, f"{mirror.name}: {exc}", level=messages.ERROR)
                continue
            enqueue_on_commit(mirror_push_task, mirror.pk)
            self.message_user(request, f"{mirror.name}: the next commit builds on the remote branch as it is now.")
