"""The Django admin site, with two edges of every model's list held before the list runs.

Django's change list turns a bad filter into its "?e=1" notice, but only when the error is
raised while the filter is built. Two hostile inputs fail later, as server errors, on every
registered list (ours and the packages': axes, oauth2_provider):

- a year outside 1–9999 (``?created_at__year=99999``, ``__iso_year``): the bounds are computed
  when the SQL is compiled, after the change list caught what it catches (the list comes back
  without that filter, and a message says why);
- a bulk action whose selection is not a key (``_selected_action=abc``): the action's
  ``filter(pk__in=…)`` converts it (the list comes back, nothing changed, with a message).

``BrainAdminSite`` checks both in front of each model's change list; it is the default site
(``BrainAdminConfig``, below), so ``admin.site`` is this site wherever a package registers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import ValidationError
from django.db.models.constants import LOOKUP_SEP
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.urls import NoReverseMatch, URLPattern, URLResolver, path

View = TypeVar("View", bound=Callable[..., Any])

YEAR_LOOKUPS = {"year", "iso_year"}  # the lookups whose bounds Django computes from the value
LOWEST_YEAR, HIGHEST_YEAR = 1, 9999  # Python's datetime range


def years_out_of_range(params: QueryDict) -> list[str]:
    """The query string's filters by a year that is not a whole number in 1–9999 (their keys)."""
    bad: list[str] = []
    for key, values in params.lists():
        if not YEAR_LOOKUPS.intersection(key.split(LOOKUP_SEP)[1:]):
            continue
        for value in values:
            for item in value.split(",") if key.endswith(("__in", "__range")) else [value]:
                item = item.strip()
                if not (re.fullmatch(r"[0-9]{1,4}", item) and LOWEST_YEAR <= int(item) <= HIGHEST_YEAR):
                    bad.append(key)
    return sorted(set(bad))


def selection_invalid(model_admin: admin.ModelAdmin[Any], request: HttpRequest) -> bool:
    """Whether a bulk action's selection holds a value that is not a key of the list's model."""
    if request.method != "POST" or "action" not in request.POST:
        return False
    key = model_admin.model._meta.pk
    for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
        try:
            key.get_prep_value(key.to_python(value))
        except (ValidationError, ValueError, TypeError, OverflowError):
            return True
    return False


def guarded_changelist(
    model_admin: admin.ModelAdmin[Any], view: Callable[..., HttpResponse]
) -> Callable[..., HttpResponse]:
    """``view`` (a model's change list) behind the two checks above."""

    def changelist(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        bad_years = years_out_of_range(request.GET)
        if bad_years:
            # The list without those filters, and why: a year Python cannot hold filters nothing.
            kept = request.GET.copy()
            for key in bad_years:
                del kept[key]
            messages.warning(request, f"A year must be a whole number from {LOWEST_YEAR} to {HIGHEST_YEAR}; "
                                      f"that filter was removed.")  # fmt: skip
            return HttpResponseRedirect(f"{request.path}?{kept.urlencode()}" if kept else request.path)
        if selection_invalid(model_admin, request):
            messages.warning(request, "The selection names an item that does not exist; nothing was changed.")
            return HttpResponseRedirect(request.get_full_path())
        return view(request, *args, **kwargs)

    return changelist


def guarded_changeform(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``view`` (a model's add or change form) with a refusal raised while saving shown on the
    form, not as a bare error page.

    The forms check what they can before saving, but a write can still be refused after they
    passed: two administrators adding "racer" at once both pass the form, and the second is
    refused by the service inside its transaction (rolled back whole). The form is then
    validated again, which now names the problem beside its field with what was typed kept; a
    refusal the form cannot see is shown as a message over the form, opened afresh.
    """

    def changeform(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        try:
            return view(request, *args, **kwargs)
        except ValidationError:
            pass
        try:
            return view(request, *args, **kwargs)
        except ValidationError as error:
            messages.error(request, "Not saved: " + "; ".join(error.messages))
            return HttpResponseRedirect(request.get_full_path())

    return changeform


VIEW_ON_SITE_ROUTE = "r/<int:content_type_id>/<path:object_id>/"  # as django.contrib.admin routes it


def view_on_site(request: HttpRequest, content_type_id: int, object_id: str) -> HttpResponse:
    """The admin's "View on site" redirect (contenttypes' shortcut); an object whose
    ``get_absolute_url`` names no route of this site has no page: 404."""
    # Imported here: contenttypes' views import its model, and this module loads with the apps.
    from django.contrib.contenttypes import views as contenttype_views

    try:
        return contenttype_views.shortcut(request, content_type_id, object_id)
    except NoReverseMatch as exc:
        raise Http404("That object has no page on this site.") from exc


class BrainAdminSite(admin.AdminSite):
    """The admin site: every model's change list is guarded (see the module's docstring), a
    refusal while saving a form is shown on the form (``guarded_changeform``), and its
    sign-in form bounds the username (``brain.sign_in_forms``)."""

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        # Imported at the first sign-in: this module is loaded while the apps are being
        # populated, before the auth forms (and their models) can be.
        from brain.ratelimit import sign_in_limited
        from brain.sign_in_forms import AdminSignInForm

        self.login_form = AdminSignInForm
        return sign_in_limited(request) or super().login(request, extra_context)

    def get_urls(self) -> list[URLPattern | URLResolver]:
        # "View on site" follows the model's get_absolute_url; a package's model may name a
        # URL this site does not serve (oauth2_provider's Application names the toolkit's own
        # client-management pages): that object has no page here, a 404, not a server error.
        return [
            path(VIEW_ON_SITE_ROUTE, self.admin_view(view_on_site), name="view_on_site")
            if getattr(pattern, "name", None) == "view_on_site"
            else pattern
            for pattern in super().get_urls()
        ]

    def admin_view(self, view: View, cacheable: bool = False) -> View:
        model_admin = getattr(view, "__self__", None)
        name = getattr(view, "__name__", "")
        if isinstance(model_admin, admin.ModelAdmin) and name == "changelist_view":
            view = cast(View, guarded_changelist(model_admin, view))
        if isinstance(model_admin, admin.ModelAdmin) and name in ("add_view", "change_view"):
            view = cast(View, guarded_changeform(view))
        return super().admin_view(view, cacheable)


class BrainAdminConfig(AdminConfig):
    """``django.contrib.admin`` with ``BrainAdminSite`` as its default site (in INSTALLED_APPS
    in the admin's place; here, not in ``brain.apps``, where a second app config would make
    Django unsure which one is the ``brain`` app's)."""

    default_site = "brain.admin_site.BrainAdminSite"
