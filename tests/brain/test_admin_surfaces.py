"""Every admin page a person can open answers without a server error, whatever is typed into it.

Enumerated from the admin site's registry, so a model registered tomorrow is covered the day it
is added: each add form is posted empty and with every field set to each hostile value, each
changelist is opened with hostile search, ordering, paging and filter parameters (and, as a
superuser, with every date field filtered by an impossible year), every bulk action is posted
with a selection that is no key, and every object page with an id that is no number — with and
without the secrets key configured (an operator who has not set one must see a message).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.db import models
from django.test import RequestFactory, override_settings

from tests.base import BrainTestCase

HOSTILE_VALUES = [
    "",
    " ",
    "x" * 5000,
    "-1",
    "9" * 40,
    "1e309",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "ｆｕｌｌ－ｗｉｄｔｈ",
    "🙂" * 10,
    "topics//x/",
    "true",
]
CHANGELIST_PARAMS = [
    {"q": "x" * 3000},
    {"q": "' OR 1=1 --"},
    {"o": "99"},
    {"o": "-x.y"},
    {"p": "999999"},
    {"p": "-1"},
    {"all": "", "p": "abc"},
    {"nonexistent__field": "1"},
    {"id__gt": "abc"},
]


def registered() -> list[tuple[str, Any]]:
    """(URL prefix, model admin) of every registered model."""
    return [
        (f"/admin/{model._meta.app_label}/{model._meta.model_name}/", model_admin)
        for model, model_admin in admin.site._registry.items()
    ]


class AdminSurfaceTests(BrainTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.charlie.user)

    def add_form_fields(self, model_admin: Any) -> list[str]:
        request = RequestFactory().get("/")
        request.user = self.charlie.user
        if not model_admin.has_add_permission(request):
            return []
        form_class = model_admin.get_form(request)
        return list(form_class.base_fields)

    def post_every_add_form(self) -> int:
        """Posts every add form every way; fails listing each (form, value, field) that 500s."""
        self.client.raise_request_exception = False
        posted, failures = 0, []
        for prefix, model_admin in registered():
            fields = self.add_form_fields(model_admin)
            if not fields:
                continue
            assert self.client.get(f"{prefix}add/").status_code == 200, prefix
            attempts = [({field: value for field in fields}, f"all fields {value[:20]!r}") for value in HOSTILE_VALUES]
            attempts += [({field: value}, f"{field}={value[:20]!r}") for field in fields for value in HOSTILE_VALUES]
            for data, label in attempts:
                if self.client.post(f"{prefix}add/", data).status_code >= 500:
                    failures.append(f"{prefix}add/ {label}")
                posted += 1
        assert not failures, "\n".join(failures)
        return posted

    def test_every_add_form_takes_every_hostile_value_without_a_500(self) -> None:
        assert self.post_every_add_form() > 0

    def test_every_add_form_without_a_secrets_key_is_a_message_not_a_500(self) -> None:
        with override_settings(BRAIN_SECRETS_KEYS=""):
            assert self.post_every_add_form() > 0

    def test_a_secret_without_a_key_is_refused_by_name(self) -> None:
        for keys in ("", "1:not-base64!", "x:" + "A" * 44):
            with override_settings(BRAIN_SECRETS_KEYS=keys):
                response = self.client.post(
                    "/admin/integrations/integrationsecret/add/", {"name": "slack_token", "value": "xoxb-1"}
                )
            assert response.status_code == 200
            assert "Secrets cannot be stored" in response.content.decode()

    def test_every_changelist_takes_hostile_parameters_without_a_500(self) -> None:
        self.client.raise_request_exception = False
        opened, failures = 0, []
        for prefix, _ in registered():
            for params in CHANGELIST_PARAMS:
                if self.client.get(prefix, params).status_code >= 500:
                    failures.append(f"{prefix} {params}")
                opened += 1
        assert not failures, "\n".join(failures)
        assert opened >= len(CHANGELIST_PARAMS)


IMPOSSIBLE_YEARS = ["99999", "0", "-5", "abc", "²", "1e4", "2026,99999"]
NOT_KEYS = ["abc", "²", "1.5", "-", "x" * 300]


class AdminEdgesAsSuperuserTests(BrainTestCase):
    """What only a superuser reaches too: the packages' lists (axes, oauth2_provider) and actions."""

    def setUp(self) -> None:
        user = self.charlie.user
        user.is_superuser = True
        user.save(update_fields=["is_superuser"])
        self.client.force_login(user)
        self.client.raise_request_exception = False

    def test_every_date_field_takes_an_impossible_year_without_a_500(self) -> None:
        failures, tried = [], 0
        for prefix, model_admin in registered():
            dates = [f.name for f in model_admin.model._meta.get_fields() if isinstance(f, models.DateField)]
            for field in dates:
                for lookup in ("year", "iso_year", "year__gte"):
                    for year in IMPOSSIBLE_YEARS:
                        response = self.client.get(prefix, {f"{field}__{lookup}": year})
                        tried += 1
                        if response.status_code >= 500:
                            failures.append(f"{prefix}?{field}__{lookup}={year}")
        assert not failures, "\n".join(failures)
        assert tried > 50

    def test_an_impossible_year_is_removed_with_a_message(self) -> None:
        response = self.client.get("/admin/grants/group/", {"created_at__year": "99999", "q": "x"}, follow=True)
        assert response.status_code == 200
        assert response.redirect_chain[0][0] == "/admin/grants/group/?q=x"
        assert "A year must be a whole number" in response.content.decode()
        # A possible year is left alone and filters.
        response = self.client.get("/admin/grants/group/", {"created_at__year": "2026"})
        assert response.status_code == 200
        assert "A year must be a whole number" not in response.content.decode()

    def test_every_action_takes_a_selection_that_is_no_key_without_a_500(self) -> None:
        failures, tried = [], 0
        request = RequestFactory().get("/")
        request.user = self.charlie.user
        for prefix, model_admin in registered():
            for action in model_admin.get_actions(request):
                for value in NOT_KEYS:
                    data = {"action": action, helpers.ACTION_CHECKBOX_NAME: [value], "index": "0"}
                    response = self.client.post(prefix, data)
                    tried += 1
                    if response.status_code >= 500:
                        failures.append(f"{prefix} action={action} selected={value[:20]!r}")
        assert not failures, "\n".join(failures)
        assert tried >= len(NOT_KEYS) * 4

    def test_every_object_page_takes_an_id_that_is_no_number(self) -> None:
        failures = []
        for prefix, _ in registered():
            for suffix in ("change/", "delete/", "history/", "explain/"):
                for value in ("abc", "%C2%B2", "%D9%A3", "%E2%80%AE", "9" * 40):
                    response = self.client.get(f"{prefix}{value}/{suffix}")
                    if response.status_code >= 500:
                        failures.append(f"{prefix}{value}/{suffix}")
        assert not failures, "\n".join(failures)

    def test_view_on_site_never_answers_a_server_error(self) -> None:
        """Every registered model that names a page of its own (``get_absolute_url``): its
        change page and the admin's "View on site" redirect for its objects, a package's too."""
        from django.contrib.contenttypes.models import ContentType
        from oauth2_provider.models import get_application_model

        get_application_model().objects.create(
            name="Desktop agent", client_type="public", authorization_grant_type="authorization-code",
            redirect_uris="http://127.0.0.1:8765/callback",
        )  # fmt: skip
        failures, tried = [], 0
        for prefix, model_admin in registered():
            model = model_admin.model
            if not hasattr(model, "get_absolute_url"):
                continue
            content_type = ContentType.objects.get_for_model(model)
            for obj in model._default_manager.all()[:3]:
                tried += 1
                for url in (f"{prefix}{obj.pk}/change/", f"/admin/r/{content_type.pk}/{obj.pk}/"):
                    if self.client.get(url).status_code >= 500:
                        failures.append(url)
        assert not failures, "\n".join(failures)
        assert tried >= 1
        # A client has no page here: no link to one, and the redirect is a plain 404.
        application = get_application_model().objects.get()
        change = self.client.get(f"/admin/oauth2_provider/application/{application.pk}/change/")
        assert "View on site" not in change.content.decode()
        content_type = ContentType.objects.get_for_model(application)
        assert self.client.get(f"/admin/r/{content_type.pk}/{application.pk}/").status_code == 404

    def test_the_sign_in_attempts_clean_up_works(self) -> None:
        import datetime as dt

        from axes.models import AccessAttempt
        from django.utils import timezone

        old = AccessAttempt.objects.create(
            username="mallory", ip_address="192.0.2.1", user_agent="x", failures_since_start=3,
            get_data="", post_data="", http_accept="", path_info="/login/",
        )  # fmt: skip
        AccessAttempt.objects.filter(pk=old.pk).update(attempt_time=timezone.now() - dt.timedelta(days=2))
        fresh = AccessAttempt.objects.create(
            username="trudy", ip_address="192.0.2.2", user_agent="x", failures_since_start=1,
            get_data="", post_data="", http_accept="", path_info="/login/",
        )  # fmt: skip
        data = {"action": "cleanup_expired_attempts", helpers.ACTION_CHECKBOX_NAME: [str(fresh.pk)], "index": "0"}
        response = self.client.post("/admin/axes/accessattempt/", data, follow=True)
        assert response.status_code == 200
        assert "Cleaned up 1 expired access attempts" in response.content.decode()
        assert list(AccessAttempt.objects.values_list("username", flat=True)) == ["trudy"]


class AdminOfferedOnlyToWhoMaySaveTests(BrainTestCase):
    """A page the admin offers is one whose saves are not refused for who is saving: a superuser
    holding an ordinary member's row was shown the member, group and grant add forms and got 403
    on save; staff with the OAuth models' permissions but no member row were refused after
    submitting a client."""

    PAGES = (
        "/admin/grants/member/add/", "/admin/grants/group/add/", "/admin/grants/grant/add/",
        "/admin/oauth2_provider/application/add/", "/admin/oauth2_provider/application/",
    )  # fmt: skip

    def test_accounts_that_would_be_refused_on_save_are_not_offered_the_pages(self) -> None:
        from django.contrib.auth.models import Permission, User

        superuser_member = self.bob.user
        superuser_member.is_superuser = superuser_member.is_staff = True
        superuser_member.save()
        staff = User.objects.create_user("staff-no-member", password="pw-staff-98765!", is_staff=True)
        staff.user_permissions.set(Permission.objects.filter(content_type__app_label="oauth2_provider"))
        for account in (superuser_member, staff):
            self.client.force_login(account)
            for page in self.PAGES:
                assert self.client.get(page).status_code == 403, (account.username, page)
        operator = User.objects.create_superuser("operator", password="pw-operator-98765!")
        self.client.force_login(operator)  # a superuser with no member row acts as system
        for page in self.PAGES:
            assert self.client.get(page).status_code == 200, page
        self.client.force_login(self.charlie.user)  # an administrator member: people and grants
        for page in self.PAGES[:3]:
            assert self.client.get(page).status_code == 200, page
