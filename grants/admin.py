"""Django admin for members, groups, service accounts, grants and the audit log.

Every save goes through ``grants.services`` (the one write path, with its audit entry).
The admin shows no page or source content: administering is not content access.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.admin.widgets import AutocompleteSelect, AutocompleteSelectMultiple
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm
from django.contrib.auth.forms import UserChangeForm as DjangoUserChangeForm
from django.contrib.auth.models import Group as DjangoGroup
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import connections, transaction
from django.db.models import BooleanField, Q, QuerySet, Value
from django.db.models.expressions import RawSQL
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join

from brain.forms import refuse_typed_secrets
from brain.logins import login_named
from brain.text.paths import PathError, validate_category, validate_page_path
from corpus.explain import explain_access
from grants import services
from grants.audit import audit_record
from grants.models import (
    AuditEvent,
    Grant,
    Group,
    GroupMembership,
    Member,
    Permission,
    Sensitivity,
    ServiceAccount,
)
from grants.predicates import visible_ids_sql
from grants.principals import SYSTEM, Principal, principal_for_user


def admin_actor(request: HttpRequest) -> Principal:
    """The member behind the admin session; a superuser with no member row acts as system (one
    whose member row is suspended or offboarded acts as nobody)."""
    member = principal_for_user(request.user)
    if member is not None:
        return member
    if getattr(request.user, "is_superuser", False) and not _has_member_row(request):
        return SYSTEM
    raise ValidationError("your account has no active member row")


def may_administer(request: HttpRequest) -> bool:
    """Whether the admin session may manage people, grants and clients: an active owner or
    administrator, or a superuser with no member row. The same callers ``admin_actor`` acts
    for: a page offered here is never one whose saves are refused for who is saving (a
    superuser holding an ordinary member's row was shown the add forms and got 403 on save)."""
    member = principal_for_user(request.user)
    if member is not None:
        return member.is_administrator
    return bool(getattr(request.user, "is_superuser", False)) and not _has_member_row(request)


def _has_member_row(request: HttpRequest) -> bool:
    """Whether the signed-in user has a member row at all (active or not)."""
    return Member.objects.filter(user_id=request.user.pk or 0).exists()


def integer_pk(object_id: str) -> int | None:
    """An admin URL's object id as an integer key, or ``None`` (then: not found).

    ASCII digits only, at most 18 (a bigint): ``str.isdigit`` accepts "²" that ``int`` refuses,
    and ``int`` accepts "١٢" and " 12 " — either way a hostile id became a server error.
    """
    raw = unquote(object_id)
    return int(raw) if re.fullmatch(r"[0-9]{1,18}", raw) else None


def _audit_delete(request: HttpRequest, obj: Any) -> None:
    meta = obj._meta
    audit_record(actor=admin_actor(request), action=f"{meta.app_label}.{meta.model_name}.delete",
                 target_type=str(meta.model_name), target=str(obj)[:200], metadata={"id": str(obj.pk)})  # fmt: skip


class AuditedDeletes:
    """A delete in the admin (one object or a bulk selection) writes ``<app>.<model>.delete``
    naming each object, in the delete's transaction: deleting a group or a service account also
    took its grants with it, with no record. Admins whose deletes go through a service that
    audits (grants) override both methods."""

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with transaction.atomic():
            _audit_delete(request, obj)
            super().delete_model(request, obj)  # type: ignore[misc]

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with transaction.atomic():
            for obj in queryset:
                _audit_delete(request, obj)
            super().delete_queryset(request, queryset)  # type: ignore[misc]


class AdministratorOnly(AuditedDeletes):
    """Only owners/admins (or superusers) see these pages; what they delete is audited."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return may_administer(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)


class OfferedToAdministrators:
    """A model admin's own permissions, offered only to whom its saves allow (``may_administer``,
    the callers ``admin_actor`` acts for): staff holding Django's model permissions but no
    member row were shown the forms and refused after submitting them."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return may_administer(request) and bool(super().has_module_permission(request))  # type: ignore[misc]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_administer(request) and bool(super().has_view_permission(request, obj))  # type: ignore[misc]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return may_administer(request) and bool(super().has_add_permission(request))  # type: ignore[misc]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_administer(request) and bool(super().has_change_permission(request, obj))  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_administer(request) and bool(super().has_delete_permission(request, obj))  # type: ignore[misc]


class ExplainForm(forms.Form):
    path = forms.CharField(label="Page path", max_length=255, help_text="e.g. topics/pricing/discount-policy.md")
    category = forms.CharField(
        required=False, max_length=64, help_text="Only when no page you can read is at the path."
    )
    sensitivity = forms.ChoiceField(
        required=False,
        choices=[("", "—"), ("ordinary", "ordinary"), ("restricted", "restricted"), ("secret", "secret")],
        help_text="Only when no page you can read is at the path.",
    )

    def clean_path(self) -> str:
        try:
            return validate_page_path(str(self.cleaned_data["path"]).strip())
        except PathError as exc:
            raise ValidationError(f"not a page path: {exc.message}") from None


SLACK_LINKED_BY_THE_PERSON = (
    "A Slack account is linked by its own person, with /brain link in Slack; here a link can only be removed."
)


def clean_new_username(value: Any) -> str:
    """A new member's username as ``member_create`` will store it, or the form error saying why
    not (the service checks again inside its transaction)."""
    User = get_user_model()
    username = str(User.normalize_username(str(value or "").strip()))
    if not username:
        raise ValidationError("A username is required to add a member.")
    field = User._meta.get_field(User.USERNAME_FIELD)
    for validator in getattr(field, "validators", []):
        validator(username)
    login = login_named(username)
    if login is not None:
        former = Member.objects.filter(user=login, offboarded_at__isnull=False).exists()
        raise ValidationError(
            f"A user named {username!r} already exists"
            + (
                " (a former member, offboarded: their name stays theirs in the history); choose another."
                if former
                else "."
            )
        )
    return username


def clean_new_email(email: str) -> str:
    """A new member's email (may be empty), or the form error saying why not."""
    if email and services.email_in_use(email):
        raise ValidationError("Another member already uses this email address.")
    return email


class NoSecretInTheLogin(forms.ModelForm):
    """A login's username and email are shown in every list, audit view and log: a key pasted
    into either is refused beside the field (``member_create`` refuses it again)."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        refuse_typed_secrets(self, [field for field in ("username", "email") if field in self.fields])
        return cleaned


class MemberForm(NoSecretInTheLogin):
    """Add or change a member; on add, the login is validated here so a bad submit is a form error.

    The service (``member_create``) checks the same rules again inside its transaction; the form
    exists so that a person sees every problem at once beside the field, never a server error.
    """

    username = forms.CharField(
        max_length=150,
        required=False,
        help_text="Only when adding a member. Letters, digits and @/./+/-/_ only.",
    )
    email = forms.EmailField(required=False, max_length=254)  # the user row's column (Django's form allows 320)
    password = forms.CharField(
        widget=forms.PasswordInput,
        required=False,
        strip=False,
        help_text="Only when adding a member. Leave blank to set no password (they cannot sign in yet).",
    )

    class Meta:
        model = Member
        fields = ["role", "is_active", "slack_user_id"]
        help_texts = {
            "slack_user_id": "Linked by the person with /brain link in Slack. Clear it to remove the link; "
            "it cannot be set here."
        }

    def clean_username(self) -> str:
        if self.instance.pk is not None:
            return str(self.cleaned_data.get("username") or "").strip()
        return clean_new_username(self.cleaned_data.get("username"))

    def clean_email(self) -> str:
        email = str(self.cleaned_data.get("email") or "").strip()
        return clean_new_email(email) if self.instance.pk is None else email

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The link as the page showed it travels with the form, so a submit removes only a
        # link the administrator saw: one the person made after the page was opened stayed
        # blank on the form and was removed by the next save of anything else.
        if "slack_user_id" in self.fields:  # not on the add form
            self.fields["slack_user_id"].show_hidden_initial = True

    def clean_slack_user_id(self) -> str | None:
        """Only removing a link: a Slack account is linked by its own person (``/brain link``),
        or an administrator could make Slack commands act as any member. Left as shown, the
        member's current link is kept, whatever it became meanwhile."""
        current: str | None = self.instance.slack_user_id
        if "slack_user_id" not in self.changed_data:
            return current
        slack_user_id = str(self.cleaned_data.get("slack_user_id") or "").strip() or None
        if slack_user_id is not None and slack_user_id != current:
            raise ValidationError(SLACK_LINKED_BY_THE_PERSON)
        name = self.add_initial_prefix("slack_user_id")
        shown = str(self.fields["slack_user_id"].hidden_widget().value_from_datadict(self.data, self.files, name) or "")
        if slack_user_id is None and current is not None and shown.strip() != current:
            raise ValidationError("The Slack link changed after this page was opened; reload the page to see it.")
        return slack_user_id

    # Who is submitting (set by ``MemberAdmin.get_form``): the role rules depend on it.
    actor: Principal | None = None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        role = cleaned.get("role")
        if self.actor is not None and role:
            if self.instance.pk is None:
                refusals = services.member_create_refusals(self.actor, role=role)
            else:
                current = Member.objects.select_related("user").get(pk=self.instance.pk)
                is_active = cleaned.get("is_active", current.is_active)
                refusals = services.member_change_refusals(self.actor, current, role=role, is_active=is_active)
            for field, reason in refusals.items():
                self.add_error(field if field in self.fields else None, reason)
        password = cleaned.get("password")
        if self.instance.pk is None and password and cleaned.get("username"):
            User = get_user_model()
            candidate = User(**{User.USERNAME_FIELD: cleaned["username"]}, email=cleaned.get("email") or "")
            try:
                password_validation.validate_password(password, user=candidate)
            except ValidationError as error:
                self.add_error("password", error)
        return cleaned

    def validate_unique(self) -> None:
        """Uniqueness is checked above with messages of our own (the model form's would name the user row)."""


@admin.register(Member)
class MemberAdmin(AdministratorOnly, admin.ModelAdmin):
    form = MemberForm
    list_display = ["username", "role", "is_active", "slack_user_id", "created_at"]
    list_filter = ["role", "is_active"]
    search_fields = ["user__username", "user__email"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # deactivate instead: history keeps pointing at the member

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        """The form, told who submits it, so a refused role change is an error beside the field."""
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"actor": admin_actor(request)})

    def get_fields(self, request: HttpRequest, obj: Member | None = None) -> Any:
        if obj is None:
            return ["username", "email", "password", "role"]
        return ["role", "is_active", "slack_user_id", "grants_held", "explain"]

    def get_readonly_fields(self, request: HttpRequest, obj: Member | None = None) -> Any:
        return ["grants_held", "explain"] if obj is not None else []

    @admin.display(description="Grants (own and through groups)")
    def grants_held(self, obj: Member) -> str:
        grants = Grant.objects.filter(Q(member=obj) | Q(group__memberships__member=obj)).select_related("group")
        lines = [
            format_html(
                "<li>{} on {}{}</li>",
                Permission(grant.permission).label,
                f"category {grant.category}" if grant.category else (grant.path or "everything (the root)"),
                f" — through group {grant.group.name}" if grant.group is not None else "",
            )
            for grant in grants.order_by("-permission", "path", "category").distinct()
        ]
        if not lines:
            return "none: this member can read no page (administering is not content access)"
        return format_html("<ul>{}</ul>", format_html_join("", "{}", ((line,) for line in lines)))

    @admin.display(description="Explain access")
    def explain(self, obj: Member) -> str:
        url = reverse("admin:grants_member_explain", args=[obj.pk])
        return format_html('<a href="{}">Why can (or can\'t) {} see a page?</a>', url, obj.username)

    def get_urls(self) -> list[Any]:
        explain = path(
            "<path:object_id>/explain/", self.admin_site.admin_view(self.explain_view), name="grants_member_explain"
        )
        return [explain, *super().get_urls()]

    def explain_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The effective permission of this member on a page path, every grant that matched and why."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        pk = integer_pk(object_id)
        member = Member.objects.select_related("user").filter(pk=pk).first() if pk is not None else None
        if member is None:
            raise Http404("no such member")
        form = ExplainForm(request.GET or None)
        explanation = None
        if form.is_valid():
            explanation = explain_access(
                member,
                form.cleaned_data["path"],
                category=form.cleaned_data["category"] or None,
                sensitivity=Sensitivity.from_name(form.cleaned_data["sensitivity"] or "ordinary"),
                viewer=admin_actor(request),
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Explain access: {member.username}",
            "opts": self.model._meta,
            "original": member,
            "form": form,
            "explanation": explanation,
        }
        return TemplateResponse(request, "admin/grants/member/explain.html", context)

    def save_model(self, request: HttpRequest, obj: Member, form: forms.ModelForm, change: bool) -> None:
        data = form.cleaned_data
        if change:
            services.member_update(
                actor=admin_actor(request),
                member=obj,
                role=data["role"],
                is_active=data.get("is_active", obj.is_active),
                slack_user_id=data.get("slack_user_id"),
            )
            return
        created = services.member_create(
            actor=admin_actor(request),
            username=data["username"],
            email=data.get("email") or "",
            role=data["role"],
            password=data.get("password") or None,
        )
        # The admin goes on with ``obj`` (log entry, redirect): make it the row the service created.
        obj.pk = created.pk
        obj.user = created.user
        obj.is_active = created.is_active
        obj.created_at = created.created_at
        obj._state.adding = False
        if not data.get("email") and not data.get("password"):
            # Allowed (a password can be set on their login later), but nothing says so after the
            # save: the member could neither be invited nor sign in, and nobody was told.
            messages.warning(
                request,
                f"{created.username} cannot sign in yet: no password and no email. Set a password on their "
                "login (Users), or add an email and send an invitation.",
            )


class TolerantAutocomplete:
    """Django's autocomplete widgets, re-rendering a form whose posted id is not an id.

    Django's own looks the posted value up to show it again and raises on "abc" for an integer
    key (a 500 on a form any administrator can type into); a value the key cannot hold is
    left out of that lookup, and the field's own validation names it."""

    def optgroups(self, name: str, value: Any, attr: Any = None) -> Any:
        key = self.field.remote_field.model._meta.pk  # type: ignore[attr-defined]
        valid = []
        for item in value:
            try:
                key.get_prep_value(key.to_python(item))
            except (ValidationError, ValueError, TypeError):
                continue
            valid.append(item)
        return super().optgroups(name, valid, attr)  # type: ignore[misc]


class TolerantAutocompleteSelect(TolerantAutocomplete, AutocompleteSelect):
    """One object, searched for as you type (the page lists only the chosen one)."""


class TolerantAutocompleteSelectMultiple(TolerantAutocomplete, AutocompleteSelectMultiple):
    """Several objects, searched for as you type (the page lists only the chosen ones)."""


def _new_name(form: forms.ModelForm, kind: str, taken: Callable[[str], bool]) -> str:
    """A new group's or service account's name, checked as the service checks it: its form (the
    database's constraint was shown as 'Constraint "group_name_form" is violated.') and
    whether it is taken (claimed in the form: two administrators adding one name at once)."""
    name = str(form.cleaned_data.get("name") or "")
    if form.instance.pk is not None:
        return name
    try:
        validate_category(name)
    except PathError:
        raise ValidationError(
            f"A {kind} name is 1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit."
        ) from None
    if taken(name):
        raise ValidationError(f"A {kind} named {name!r} already exists.")
    return name


class GroupForm(forms.ModelForm):
    # Searched as you type (the member admin's search), never a list of every member; the
    # search goes by the membership's member field, which admits any member.
    people = forms.ModelMultipleChoiceField(
        queryset=Member.objects.select_related("user"),
        required=False,
        label="Members",
        widget=TolerantAutocompleteSelectMultiple(GroupMembership._meta.get_field("member"), admin.site),
    )

    class Meta:
        model = Group
        fields = ["name", "description"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["people"].initial = list(self.instance.members.all())

    def clean_name(self) -> str:
        return _new_name(self, "group", services.group_name_taken)


class ServiceAccountForm(forms.ModelForm):
    class Meta:
        model = ServiceAccount
        fields = ["name", "description", "is_active"]

    def clean_name(self) -> str:
        return _new_name(self, "service account", services.service_account_name_taken)


@admin.register(Group)
class GroupAdmin(AdministratorOnly, admin.ModelAdmin):
    form = GroupForm
    list_display = ["name", "description", "created_at"]
    search_fields = ["name"]
    fields = ["name", "description", "people"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["name"] if obj else []

    def save_model(self, request: HttpRequest, obj: Group, form: forms.ModelForm, change: bool) -> None:
        actor = admin_actor(request)
        if change:
            services.group_update(actor=actor, group=obj, description=obj.description)
        else:
            obj.pk = services.group_create(actor=actor, name=obj.name, description=obj.description).pk
        wanted = set(form.cleaned_data.get("people") or [])
        current = set(obj.members.all())
        for member in wanted - current:
            services.group_add_member(actor=actor, group=obj, member=member)
        for member in current - wanted:
            services.group_remove_member(actor=actor, group=obj, member=member)

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: Any, change: bool) -> None:
        """Memberships were saved through the services in ``save_model``."""


@admin.register(ServiceAccount)
class ServiceAccountAdmin(AdministratorOnly, admin.ModelAdmin):
    form = ServiceAccountForm
    list_display = ["name", "is_active", "description", "created_at"]
    search_fields = ["name"]
    fields = ["name", "description", "is_active"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["name"] if obj else []  # the update service keeps the name: a rename said "changed" and was dropped

    def save_model(self, request: HttpRequest, obj: ServiceAccount, form: forms.ModelForm, change: bool) -> None:
        if change:
            services.service_account_update(
                actor=admin_actor(request), account=obj, description=obj.description, is_active=obj.is_active
            )
        else:
            obj.pk = services.service_account_create(
                actor=admin_actor(request), name=obj.name, description=obj.description
            ).pk


class GrantForm(forms.ModelForm):
    """Scope errors are shown on the form, from the same checks the service runs."""

    path = forms.CharField(
        required=False,
        strip=False,
        help_text="Exact page path, or a prefix ending in '/'. Leave empty and set a category instead.",
    )
    whole_corpus = forms.BooleanField(required=False, help_text="Scope: the whole corpus (path '').")

    class Meta:
        model = Grant
        fields = ["member", "group", "service_account", "path", "category", "permission"]

    def _get_validation_exclusions(self) -> set[str]:
        # The subject, scope and uniqueness are checked in clean() by the service's own rules,
        # with messages that say what to do; the model's constraints on them repeated it by
        # their names ("Constraint “grant_exactly_one_subject” is violated.").
        excluded: set[str] = super()._get_validation_exclusions()  # type: ignore[misc]  # Django's, untyped in the stubs
        return {*excluded, "member", "group", "service_account", "path", "category"}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        path = "" if data.get("whole_corpus") else (data.get("path") or None)
        category = data.get("category") or None
        parts: dict[str, Any] = {
            "member": data.get("member"),
            "group": data.get("group"),
            "service_account": data.get("service_account"),
            "path": path,
            "category": category,
        }
        try:
            level = services.grant_check(**parts, permission=data.get("permission"))
        except ValidationError as exc:
            for field, problems in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, problems)
        else:
            held = services.grant_held_already(**parts, permission=level)
            if held is not None:
                self.add_error(None, held)
        data["path"], data["category"] = path, category
        return data


@admin.register(Grant)
class GrantAdmin(AdministratorOnly, admin.ModelAdmin):
    form = GrantForm
    list_display = ["id", "subject_label", "scope_label", "permission", "created_by", "created_at"]
    # The subject and the issuer are named on each row: read with the rows, not one by one.
    list_select_related = ["member__user", "group", "service_account", "created_by__user"]
    list_filter = ["permission"]
    search_fields = ["path", "category", "member__user__username", "group__name", "service_account__name"]
    autocomplete_fields = ["member", "group", "service_account"]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name in self.get_autocomplete_fields(request):
            kwargs["widget"] = TolerantAutocompleteSelect(db_field, self.admin_site, using=kwargs.get("using"))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Grants are issued or revoked, never edited: an edit would hide what was granted.
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: Grant, form: forms.ModelForm, change: bool) -> None:
        data = form.cleaned_data
        grant = services.grant_issue(
            actor=admin_actor(request),
            permission=Permission(data["permission"]),
            member=data.get("member"),
            group=data.get("group"),
            service_account=data.get("service_account"),
            path=data.get("path"),
            category=data.get("category"),
        )
        obj.pk = grant.pk

    def delete_model(self, request: HttpRequest, obj: Grant) -> None:
        services.grant_revoke(actor=admin_actor(request), grant=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Grant]) -> None:
        for grant in queryset:
            services.grant_revoke(actor=admin_actor(request), grant=grant)


class EstimatedCountPaginator(Paginator):
    """Pages a table that only grows without counting all of it on every page.

    Unfiltered, the total is PostgreSQL's estimate of the table's rows (``pg_class.reltuples``,
    kept current by autovacuum's ANALYZE) once that is over ``exact_up_to``; below it (or before
    the table was first analysed) the rows are counted, but no further than ``exact_up_to`` + 1,
    and exactly only if there are more than that. A filtered or searched list is counted exactly.
    """

    exact_up_to = 10_000

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if not isinstance(rows, QuerySet) or rows.query.where:
            return super().count
        with connections[rows.db].cursor() as cursor:
            cursor.execute(
                "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [rows.model._meta.db_table]
            )
            found = cursor.fetchone()
        estimate = int(found[0]) if found else -1
        if estimate > self.exact_up_to:
            return estimate
        counted = rows.order_by()[: self.exact_up_to + 1].count()
        return counted if counted <= self.exact_up_to else super().count


class FixedChoicesFilter(admin.SimpleListFilter):
    """A filter whose choices are written here: Django's own for a field read them with a
    ``SELECT DISTINCT`` over the whole table on every page."""

    choices_list: tuple[tuple[str, str], ...] = ()

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return self.choices_list

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        value = self.value()
        if value is None:
            return None
        if value not in dict(self.choices_list):
            return queryset.none()
        return self.filtered(queryset, str(value))

    def filtered(self, queryset: QuerySet[Any], value: str) -> QuerySet[Any]:
        return queryset.filter(**{str(self.parameter_name): value})


class ActorKindFilter(FixedChoicesFilter):
    title = "actor kind"
    parameter_name = "actor_kind"
    choices_list = (("member", "member"), ("service", "service account"), ("user", "login without a member row"),
                    ("system", "system"))  # fmt: skip


# What audit actions begin with (``<family>.<what>``; admin deletes are ``<app>.<model>.delete``).
AUDIT_ACTION_FAMILIES = (
    "auth", "build", "content", "corpus", "drafts", "figure", "grant", "grants", "group", "ingest",
    "integration_secret", "integrations", "member", "memory", "mirror", "oauth", "page",
    "personal_token", "question_credential", "revision", "service_account", "session", "slack",
    "source", "user",
)  # fmt: skip


class ActionFamilyFilter(FixedChoicesFilter):
    title = "action"
    parameter_name = "action_family"
    choices_list = tuple((family, f"{family}.*") for family in AUDIT_ACTION_FAMILIES)

    def filtered(self, queryset: QuerySet[Any], value: str) -> QuerySet[Any]:
        return queryset.filter(action__startswith=f"{value}.")


AUDIT_TARGET_TYPES = (
    "build", "corpus", "figure", "grant", "group", "integrationsecret", "member", "memory",
    "memory_settings", "mirror", "oauth_app", "oauth_application", "page", "personal_token",
    "question_credential", "service_account", "serviceaccount", "setting", "source",
    "teammemorysettings", "user",
)  # fmt: skip


class TargetTypeFilter(FixedChoicesFilter):
    title = "target type"
    parameter_name = "target_type"
    choices_list = tuple((kind, kind) for kind in AUDIT_TARGET_TYPES)


@admin.register(AuditEvent)
class AuditEventAdmin(AdministratorOnly, admin.ModelAdmin):
    """Read-only: the table refuses UPDATE and DELETE anyway.

    The table only grows (hundreds of thousands of rows), so the list never reads all of it:

    - **Search** matches a whole value, exactly (case counts): an action (``grant.issue``), a
      target (a page path, a grant id, a build id, a username), an actor's name (``alice``,
      ``system``) or a request id (from an error page or the ``x-request-id`` header). Several
      words must each match; quote a value with spaces. A part of a value finds nothing. Each
      is a plain equality test (no upper-casing, no ``LIKE '%…%'``): at most one pass over the
      table (about 50 ms for the page and 50 ms for its count at 550,000 rows, where the
      substring search over four upper-cased columns took over a second).
    - **Filters** offer fixed choices (no ``SELECT DISTINCT`` per column): actor kind, action
      family (``grant.*``: a prefix), target type (the ``(target_type, target)`` index), and a
      time range (the ``created_at`` index) in place of the date drill-down, whose every level
      listed the distinct days, months or years of the whole table. An event of a family or
      type not listed is still in the unfiltered list and found by search.
    - **Count**: the unfiltered total is PostgreSQL's estimate (``EstimatedCountPaginator``),
      a filtered one is counted once (no second "of N total" count).
    - **Order**: newest first (the ``created_at`` index); only the time column sorts, since any
      other sorted the whole table on each page.
    """

    list_display = ["created_at", "actor_label", "action", "target_type", "target_shown", "request_id"]
    fields = ["created_at", "actor_label", "action", "target_type", "target_shown", "metadata_shown", "request_id"]
    readonly_fields = ["created_at", "actor_label", "action", "target_type", "target_shown", "metadata_shown",
                       "request_id"]  # fmt: skip
    list_filter = [("created_at", admin.DateFieldListFilter), ActorKindFilter, ActionFamilyFilter, TargetTypeFilter]
    search_fields = ["action__exact", "target__exact", "actor_label__exact", "request_id__exact"]
    search_help_text = (
        "A whole action (grant.issue), target (a page path, an id), actor name or request id, exactly — "
        "not a part of one."
    )
    sortable_by = ["created_at"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        """Each event annotated with whether its target (a page path, a capture key) is one the
        administrator may read: being an administrator confers no content access, and a
        secret page's path ("board/merger-with-….md") is content (its revisions, promotions)."""
        events: QuerySet[AuditEvent] = super().get_queryset(request)
        return events.annotate(target_readable=_target_readable(admin_actor(request)))

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[AuditEvent], search_term: str) -> Any:
        """A search for a path the administrator may not read finds nothing, as for one never used."""
        found, duplicates = super().get_search_results(request, queryset, search_term)
        if search_term:
            found = found.filter(target_readable=True)
        return found, duplicates

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        """The event, its target and metadata blanked in memory when hidden (its page title is
        ``str(event)``, which names the target); the admin never saves it."""
        event = super().get_object(request, object_id, from_field)
        if event is not None and not getattr(event, "target_readable", True):
            event.target, event.metadata = HIDDEN_TARGET, {}
        elif event is not None and event.target_type in PAGE_PATHS_IN_METADATA and isinstance(event.metadata, dict):
            # Pages named in the metadata (a build's pages, a moved figure's old page); other
            # events' paths (a grant's scope) are the administrator's own business.
            keys = PAGE_PATHS_IN_METADATA[event.target_type]
            named = {key: value for key, value in event.metadata.items() if key in keys and isinstance(value, str)}
            readable = _readable_page_paths(admin_actor(request), set(named.values()))
            event.metadata = {
                key: (HIDDEN_TARGET if key in named and value not in readable else value)
                for key, value in event.metadata.items()
            }
        return event

    @admin.display(description="target")
    def target_shown(self, event: AuditEvent) -> str:
        return event.target if getattr(event, "target_readable", True) else HIDDEN_TARGET

    @admin.display(description="metadata")
    def metadata_shown(self, event: AuditEvent) -> Any:
        return event.metadata if getattr(event, "target_readable", True) else HIDDEN_TARGET

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


HIDDEN_TARGET = "(not shown: you cannot read it)"
# Metadata keys that name a page, by the event's target type (shown only when readable).
PAGE_PATHS_IN_METADATA: dict[str, tuple[str, ...]] = {"build": ("path", "new_path"), "page": ("from",)}


def _readable_page_paths(viewer: Principal, paths: set[str]) -> set[str]:
    """Of ``paths``, those of pages ``viewer`` may read (one query; none asked: none run)."""
    pages = visible_ids_sql(viewer, "read", table="corpus_page")
    if not paths or pages is None:
        return paths
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT path FROM corpus_page WHERE path = ANY(%s) AND id IN ({pages[0]})",  # noqa: S608
                       [sorted(paths), *pages[1]])  # fmt: skip
        return {str(row[0]) for row in cursor.fetchall()}


def _target_readable(viewer: Principal) -> Any:
    """SQL: true unless the event names a page or capture ``viewer`` cannot read (one with no
    row to judge it by — a draft's path never promoted — counts as unreadable).

    Judged: page and source events by their target; a figure's by the page in its metadata;
    a refused secret (``content.refused``, whose target type is the refused field) by its
    target — ``capture:<key>`` a capture, anything else a page path (a figure key under it
    matches no page, and is hidden).
    """
    pages = visible_ids_sql(viewer, "read", table="corpus_page")
    sources = visible_ids_sql(viewer, "read", table="corpus_source", path_column="scope_path")
    if pages is None or sources is None:  # the system (a superuser without a member row) sees all
        return Value(True, output_field=BooleanField())
    table = AuditEvent._meta.db_table

    # Every interpolated name is a code constant or a column; values are parameters.
    def page_readable(path: str) -> str:
        return f"EXISTS (SELECT 1 FROM corpus_page p WHERE p.path = {path} AND p.id IN ({pages[0]}))"  # noqa: S608

    def source_readable(key: str) -> str:
        return f"EXISTS (SELECT 1 FROM corpus_source s WHERE s.key = {key} AND s.id IN ({sources[0]}))"  # noqa: S608

    target, figure_page = f"{table}.target", f"({table}.metadata ->> 'page')"
    sql = (
        f"CASE WHEN {table}.action = 'content.refused' THEN"
        f" CASE WHEN left({target}, 8) = 'capture:' THEN {source_readable(f'substr({target}, 9)')}"
        f" ELSE {page_readable(target)} END"
        f" WHEN {table}.target_type = 'page' THEN {page_readable(target)}"
        f" WHEN {table}.target_type = 'source' THEN {source_readable(target)}"
        f" WHEN {table}.target_type = 'figure' THEN {figure_page} IS NULL OR {page_readable(figure_page)}"
        " ELSE true END"
    )
    params = (*sources[1], *pages[1], *pages[1], *sources[1], *pages[1])
    return RawSQL(sql, params, output_field=BooleanField())  # noqa: S611 - constants and params


# --------------------------------------------------------------------------- Django users


class UserAddForm(NoSecretInTheLogin, AdminUserCreationForm):
    def clean_username(self) -> str:
        """Names are one however they are capitalised or folded (``username_taken``): Django's
        own check let ``STRASSE`` in beside ``straße``."""
        username = str(super().clean_username())
        if services.username_taken(username):
            raise ValidationError(f"A user named {username!r} already exists.")
        return username


class UserChangeForm(NoSecretInTheLogin, DjangoUserChangeForm):
    def clean_email(self) -> str:
        """One address, one person: single sign-on matches a member by email, so a second
        holder would re-point the first one's sign-in (or lock both out)."""
        email = str(self.cleaned_data.get("email") or "").strip()
        if email and services.email_in_use(email, besides=self.instance):
            raise ValidationError("Another user already uses this email address.")
        return email


class UserAdmin(OfferedToAdministrators, AuditedDeletes, DjangoUserAdmin):
    """Django's user admin, audited: every add, change and delete of a login writes an audit
    event naming who did it and which fields changed (never their values); setting someone's
    password also tells the person.

    Offered only to whom its saves allow (``OfferedToAdministrators``): the password form
    once saved a password before the audit refused its sender, unaudited and untold.

    A superuser can set any user's password here — the trust boundary of a self-hosted
    deployment (docs/security.md). It cannot be done silently: the change writes an audit
    event naming who did it, and the person gets an email saying their password was set by
    an administrator (Django's mail backend; the console in development).
    """

    form = UserChangeForm
    add_form = UserAddForm
    list_display = ["username", "email", "is_staff", "is_active", "member_row"]
    list_select_related = ["member"]

    @admin.display(description="Member")
    def member_row(self, obj: Any) -> str:
        """A login without a member row can sign in but reaches nothing: say so, and where to fix it."""
        try:
            member = obj.member
        except Member.DoesNotExist:
            member = None
        if member is not None:
            url = reverse("admin:grants_member_change", args=[member.pk])
            return format_html('<a href="{}">{}</a>', url, member.get_role_display())
        return format_html(
            "<strong>none</strong> — this login reaches no page, memory or build; select it and "
            "run the action <em>{}</em>",
            self.make_members.short_description,  # type: ignore[attr-defined]  # set by @admin.action
        )

    @admin.action(description="Make the selected logins members (role: member)", permissions=["change"])
    def make_members(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """A login made here (or by createsuperuser) has no member row; the Members add form
        makes a new login, so this is where an existing one becomes a member."""
        actor = admin_actor(request)
        made = 0
        with transaction.atomic():
            for user in queryset.filter(member__isnull=True, is_active=True):
                services.member_ensure(actor=actor, user=user)
                made += 1
        skipped = queryset.count() - made
        note = f"; {skipped} already members or inactive, left as they were" if skipped else ""
        self.message_user(request, f"{made} login(s) made members{note}.")

    actions = ["make_members"]

    # A member's login changes through the member's own pages (suspend, reactivate, role):
    # unticking "active" here skipped suspension's revocations — ticking it again brought back
    # every token and session — and a rename moved page ownership (owner: is a username) to
    # whoever took the old name next. Neither was audited.
    MEMBER_MANAGED = ("username", "is_active", "is_superuser", "is_staff")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = [*super().get_readonly_fields(request, obj), *(["member_row"] if obj is not None else [])]
        if obj is not None and Member.objects.filter(user=obj).exists():
            fields += [name for name in self.MEMBER_MANAGED if name not in fields]
        return fields

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        # Django's auth groups are not Brain's groups and are managed nowhere (their list is
        # unregistered below): the picker is left out. Model permissions stay — a staff login
        # needs them for the packages' pages (OAuth clients, sign-in attempts).
        unused = {"groups"}
        fieldsets = [
            (name, {**options, "fields": [field for field in options["fields"] if field not in unused]})
            for name, options in super().get_fieldsets(request, obj)
        ]
        if obj is not None:
            fieldsets.insert(1, ("Brain", {"fields": ["member_row"]}))
        return fieldsets

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """A member's login is never deleted here (the member admin grants no delete, so Django
        refused with "no permission to delete member"); the page now says what to do instead."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        members = Member.objects.filter(user__in=list(objs)).select_related("user").order_by("user__username")
        kept = [f"{member.username}: a member's login is not deleted; offboard them from their member page "
                "(their personal memories are exported and deleted, what they shared and the audit trail stay)"
                for member in members]  # fmt: skip
        if kept:
            perms_needed = {name for name in perms_needed if name != Member._meta.verbose_name}
            protected = [*protected, *kept]
        return deleted, counts, perms_needed, protected

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            audit_record(actor=admin_actor(request), action="user.change" if change else "user.create",
                         target_type="user", target=str(obj.get_username()),
                         metadata={"fields": sorted(form.changed_data)})  # fmt: skip

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> Any:
        # Who is acting, before anything is saved; the password, its audit event and the mail
        # to the person in one transaction: a password is never set silently.
        actor = admin_actor(request) if request.method == "POST" else None
        with transaction.atomic():
            response = super().user_change_password(request, id, form_url)
            if actor is not None and response.status_code == 302:
                user = self.get_object(request, unquote(id))
                if user is not None:
                    services.password_set_by_administrator(actor=actor, user=user)
        return response


admin.site.unregister(User)
admin.site.register(User, UserAdmin)
# Brain's groups are "Member groups" above; Django's auth groups (permission sets) are unused and
# listing both confused administrators.
admin.site.unregister(DjangoGroup)
