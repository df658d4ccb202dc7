"""The member admin, extended with people coming and going.

``grants.admin.MemberAdmin`` administers roles and grants; this subclass (registered in its
place, since ``accounts`` sits above every app it orchestrates) adds: invite by email,
suspend, reactivate, offboard, and on each member's page their status, groups, connected
apps and sessions. Every action goes through ``accounts.services`` and is audited there.
"""

from __future__ import annotations

from typing import Any

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Prefetch, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from accounts import services
from accounts.models import Invitation, SignedInSession
from brain.forms import refuse_typed_secrets
from builds.models import Build
from grants.admin import (
    MemberAdmin,
    ServiceAccountAdmin,
    TolerantAutocompleteSelect,
    admin_actor,
    clean_new_email,
    clean_new_username,
    integer_pk,
)
from grants.models import Member, ServiceAccount
from oauth.selectors import connections_for


class InviteForm(forms.Form):
    """Who to invite; every problem the service would refuse is shown beside its field first."""

    username = forms.CharField(max_length=150, help_text="Letters, digits and @/./+/-/_ only.")
    email = forms.EmailField(max_length=254, help_text="The invitation link is sent here. It works once and expires.")
    role = forms.ChoiceField(choices=Member.Role.choices, initial=Member.Role.MEMBER)

    def clean_username(self) -> str:
        return clean_new_username(self.cleaned_data.get("username"))

    def clean_email(self) -> str:
        return clean_new_email(str(self.cleaned_data.get("email") or "").strip())

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        refuse_typed_secrets(self, ["username", "email"])
        return cleaned


# The builds' requester: the field a reassignment sets. The member search behind the picker
# goes by it, and offers active members only (``PeopleMemberAdmin.get_search_results``).
REQUESTER = Build._meta.get_field("requester")


class MemberSearchSelect(TolerantAutocompleteSelect):
    """A member picker searched as you type: the page lists only the chosen member, never every
    one (its scripts come with the form's media, printed by the lifecycle pages' templates)."""


class HandOverForm(forms.Form):
    """What happens to the member's unfinished builds."""

    builds = forms.ChoiceField(
        label="Their open builds",
        choices=[("cancel", "Cancel them"), ("reassign", "Reassign them to another member")],
        initial="cancel",
        widget=forms.RadioSelect,
    )
    reassign_to = forms.ModelChoiceField(
        queryset=Member.objects.none(),
        required=False,
        label="Reassign to",
        widget=MemberSearchSelect(REQUESTER, admin.site),
    )

    def __init__(self, *args: Any, member: Member, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["reassign_to"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = (
            Member.objects.filter(is_active=True, user__is_active=True).exclude(pk=member.pk).select_related("user")
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("builds") == "reassign" and not data.get("reassign_to"):
            self.add_error("reassign_to", "Choose who carries their builds on.")
        if data.get("builds") != "reassign":
            data["reassign_to"] = None
        return data


class OffboardForm(HandOverForm):
    send_export = forms.BooleanField(
        required=False,
        initial=True,
        label="Email them their personal memories first",
        help_text="Sent to their own address as a JSON-lines attachment; you never see them.",
    )
    confirm = forms.BooleanField(
        label="I understand their personal memories are deleted for good",
        error_messages={"required": "Tick this box to confirm the deletion."},
    )


class PeopleMemberAdmin(MemberAdmin):
    """Members, with invitations, suspension, reactivation and offboarding."""

    list_display = ["username", "role", "status", "slack_user_id", "created_at"]
    list_select_related = ["user"]
    change_list_template = "admin/accounts/member_change_list.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Member]:
        # The list shows each member's status, which needs their open invitation: one query for all.
        open_invitations = Invitation.objects.filter(accepted_at__isnull=True, withdrawn_at__isnull=True)
        return (
            super()
            .get_queryset(request)
            .select_related("user")
            .prefetch_related(Prefetch("invitations", queryset=open_invitations, to_attr="open_invitations"))
        )

    def get_fields(self, request: HttpRequest, obj: Member | None = None) -> Any:
        if obj is None:
            return super().get_fields(request, obj)
        return ["status", "lifecycle", "role", "slack_user_id", "groups_held", "grants_held", "explain",
                "connected_apps", "sessions"]  # fmt: skip

    def get_readonly_fields(self, request: HttpRequest, obj: Member | None = None) -> Any:
        if obj is None:
            return []
        return ["status", "lifecycle", "groups_held", "grants_held", "explain", "connected_apps", "sessions"]

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Member], search_term: str) -> Any:
        """The member search; behind the hand-over picker (a build's new requester), active
        members only. The form still checks its own rules (not the member who leaves)."""
        found, duplicates = super().get_search_results(request, queryset, search_term)
        source = tuple(request.GET.get(key) for key in ("app_label", "model_name", "field_name"))
        if source == (REQUESTER.model._meta.app_label, REQUESTER.model._meta.model_name, REQUESTER.name):
            found = found.filter(is_active=True, user__is_active=True)
        return found, duplicates

    @admin.display(description="Status")
    def status(self, obj: Member) -> str:
        if obj.offboarded_at:
            return f"former member (left {obj.offboarded_at:%Y-%m-%d})"
        if not (obj.is_active and obj.user.is_active):
            return "suspended"
        open_invitations = getattr(obj, "open_invitations", None)
        if open_invitations is None:
            open_invitations = list(obj.invitations.filter(accepted_at__isnull=True, withdrawn_at__isnull=True))
        pending = next((invitation for invitation in open_invitations if invitation.state == "pending"), None)
        if pending is not None:
            return f"invited (link expires {pending.expires_at:%Y-%m-%d %H:%M})"
        return "active"

    @admin.display(description="People come and go")
    def lifecycle(self, obj: Member) -> str:
        links: list[tuple[str, str]] = []
        if obj.offboarded_at is None and obj.is_active and obj.user.is_active:
            links.append((reverse("admin:accounts_member_suspend", args=[obj.pk]), "Suspend"))
            if obj.user.email and not obj.user.has_usable_password():
                links.append((reverse("admin:accounts_member_invite_again", args=[obj.pk]), "Send a new invitation"))
        elif obj.offboarded_at is None:
            links.append((reverse("admin:accounts_member_reactivate", args=[obj.pk]), "Reactivate"))
        if obj.offboarded_at is None:
            links.append((reverse("admin:accounts_member_offboard", args=[obj.pk]), "Offboard (they are leaving)"))
        if not links:
            return "—"
        return format_html_join(" · ", '<a href="{}">{}</a>', links)

    @admin.display(description="Groups")
    def groups_held(self, obj: Member) -> str:
        names = [group.name for group in obj.groups.all()]
        return ", ".join(names) if names else "none"

    @admin.display(description="Connected apps")
    def connected_apps(self, obj: Member) -> str:
        connections = connections_for(obj)
        if not connections:
            return "none"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>{} — {} (since {})</li>",
                ((c.name, " ".join(c.sorted_scopes), f"{c.connected_at:%Y-%m-%d}") for c in connections),
            ),
        )

    @admin.display(description="Signed-in sessions")
    def sessions(self, obj: Member) -> str:
        entries = SignedInSession.objects.live().filter(user=obj.user).order_by("-last_seen_at")
        if not entries:
            return "none"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>{} from {}, last seen {}</li>",
                ((e.browser, e.ip or "?", f"{e.last_seen_at:%Y-%m-%d %H:%M}")
                 for e in entries),
            ),
        )  # fmt: skip

    def get_urls(self) -> list[Any]:
        def view(name: str, route: str, handler: Any) -> Any:
            return path(route, self.admin_site.admin_view(handler), name=f"accounts_member_{name}")

        return [
            view("invite", "invite/", self.invite_view),
            view("invite_again", "<path:object_id>/invite/", self.invite_again_view),
            view("suspend", "<path:object_id>/suspend/", self.suspend_view),
            view("reactivate", "<path:object_id>/reactivate/", self.reactivate_view),
            view("offboard", "<path:object_id>/offboard/", self.offboard_view),
            *super().get_urls(),
        ]

    # ------------------------------------------------------------------ views

    def _member(self, request: HttpRequest, object_id: str) -> Member:
        if not self.has_change_permission(request):
            raise PermissionDenied
        pk = integer_pk(object_id)
        member = Member.objects.select_related("user").filter(pk=pk).first() if pk is not None else None
        if member is None:
            raise Http404("no such member")
        return member

    def _render(self, request: HttpRequest, template: str, title: str, **context: Any) -> TemplateResponse:
        return TemplateResponse(
            request,
            f"admin/accounts/{template}",
            {**self.admin_site.each_context(request), "title": title, "opts": self.model._meta, **context},
        )

    def _back(self, member: Member) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:grants_member_change", args=[member.pk]))

    @staticmethod
    def _errors_to(form: forms.Form, error: ValidationError) -> None:
        if hasattr(error, "error_dict"):
            for field, problems in error.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            form.add_error(None, error.messages)

    def invite_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = InviteForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                invitation = services.member_invite(
                    actor=admin_actor(request),
                    username=form.cleaned_data["username"].strip(),
                    email=form.cleaned_data["email"],
                    role=form.cleaned_data["role"],
                )
            except ValidationError as error:
                self._errors_to(form, error)
            else:
                messages.success(request, _sent(invitation))
                return self._back(invitation.member)
        return self._render(request, "invite.html", "Invite a member by email", form=form)

    def invite_again_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        member = self._member(request, object_id)
        if request.method == "POST":
            try:
                invitation = services.invitation_send(actor=admin_actor(request), member=member)
            except ValidationError as error:
                messages.error(request, " ".join(error.messages))
            else:
                messages.success(request, _sent(invitation) + " Earlier links no longer work.")
            return self._back(member)
        explanation = f"A new link goes to {member.user.email}; any earlier link stops working."
        title = f"Send {member.username} a new invitation"
        return self._render(
            request, "confirm.html", title, original=member, action="Send a new invitation", explanation=explanation
        )

    def suspend_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        member = self._member(request, object_id)
        form = HandOverForm(request.POST or None, member=member)
        if request.method == "POST" and form.is_valid():
            try:
                ended = services.member_suspend(
                    actor=admin_actor(request), member=member, reassign_to=form.cleaned_data["reassign_to"]
                )
            except ValidationError as error:
                self._errors_to(form, error)
            else:
                messages.success(request, f"{member.username} is suspended. Ended: {_ended(ended)}.")
                return self._back(member)
        return self._render(request, "suspend.html", f"Suspend {member.username}", original=member, form=form,
                            state=services.describe(member, viewer=admin_actor(request)))  # fmt: skip

    def reactivate_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        member = self._member(request, object_id)
        if request.method == "POST":
            try:
                services.member_reactivate(actor=admin_actor(request), member=member)
            except ValidationError as error:
                messages.error(request, " ".join(error.messages))
            else:
                messages.success(request, f"{member.username} is active again. Their old tokens stay revoked.")
            return self._back(member)
        explanation = (
            "They can sign in again and reach what their grants allow. Tokens, connected apps and "
            "credentials revoked at suspension stay revoked."
        )
        title = f"Reactivate {member.username}"
        return self._render(
            request, "confirm.html", title, original=member, action="Reactivate", explanation=explanation
        )

    def offboard_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        member = self._member(request, object_id)
        form = OffboardForm(request.POST or None, member=member, initial={"send_export": bool(member.user.email)})
        if request.method == "POST" and form.is_valid():
            try:
                done = services.member_offboard(
                    actor=admin_actor(request),
                    member=member,
                    send_export=form.cleaned_data["send_export"],
                    reassign_to=form.cleaned_data["reassign_to"],
                )
            except ValidationError as error:
                self._errors_to(form, error)
            else:
                sent = f" Their export went to {done.export_sent_to}." if done.export_sent_to else ""
                messages.success(request, f"{member.username} is offboarded: {done.memories_deleted} personal "
                                          f"memories deleted.{sent}")  # fmt: skip
                if done.owned_pages or done.owned_unseen:
                    unseen = (f"; {done.owned_unseen} more you cannot read (someone who can must hand them on)"
                              if done.owned_unseen else "")  # fmt: skip
                    messages.warning(request, f"They still own {len(done.owned_pages) + done.owned_unseen} page(s); "
                                              f"hand them on through a build: {', '.join(done.owned_pages[:20])}"
                                              f"{unseen}")  # fmt: skip
                return self._back(member)
        return self._render(request, "offboard.html", f"Offboard {member.username}", original=member, form=form,
                            state=services.describe(member, viewer=admin_actor(request)))  # fmt: skip


def _sent(invitation: Invitation) -> str:
    return (
        f"Invitation sent to {invitation.email}; the link works once and expires "
        f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC."
    )


def _ended(ended: services.Suspension) -> str:
    parts = [
        f"{ended.sessions} session(s)",
        f"{ended.oauth_tokens} OAuth token(s)",
        f"{ended.personal_tokens} personal token(s)",
        f"{ended.question_credentials} question credential(s)",
        f"{ended.builds_cancelled} build(s) cancelled",
        f"{ended.builds_reassigned} build(s) reassigned",
    ]
    if ended.issued_credentials:
        parts.append(f"{ended.issued_credentials} question credential(s) they issued to others (issue new ones)")
    if ended.invitations_sent_withdrawn:
        parts.append(f"{ended.invitations_sent_withdrawn} invitation(s) they sent withdrawn")
    return ", ".join(parts)


admin.site.unregister(Member)
admin.site.register(Member, PeopleMemberAdmin)


class AccountsServiceAccountAdmin(ServiceAccountAdmin):
    """Service accounts; a change goes through ``accounts.services.service_account_change``,
    which also revokes a deactivated account's credentials."""

    def save_model(self, request: HttpRequest, obj: ServiceAccount, form: forms.ModelForm, change: bool) -> None:
        if not change:
            super().save_model(request, obj, form, change)
            return
        services.service_account_change(
            actor=admin_actor(request), account=obj, description=obj.description, is_active=obj.is_active
        )


admin.site.unregister(ServiceAccount)
admin.site.register(ServiceAccount, AccountsServiceAccountAdmin)


class SignInAttemptAdmin(AccessAttemptAdmin):  # type: ignore[misc]  # axes ships no types
    """django-axes' failed sign-ins, with its "Clean up expired attempts" action working.

    The package's action reads the attempt time its middleware sets on sign-in requests only,
    so from the admin it was a server error; "now" is the time it means.
    """

    @admin.action(description="Clean up expired attempts")
    def cleanup_expired_attempts(self, request: HttpRequest, queryset: QuerySet[AccessAttempt]) -> None:
        request.axes_attempt_time = timezone.now()  # type: ignore[attr-defined]
        super().cleanup_expired_attempts(request, queryset)


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, SignInAttemptAdmin)
