"""Every admin page a person can open answers without a server error, whatever is typed into it.

Enumerated from the admin site's registry, so a model registered tomorrow is covered the day it
is added: each add form is posted empty and with every field set to each hostile value, each
changelist is opened with hostile search, ordering, paging and filter parameters — with and
without the secrets key configured (an operator who has not set one must see a message).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
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
