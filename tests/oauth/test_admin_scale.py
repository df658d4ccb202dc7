"""The OAuth token admins with many (dynamically registered) clients: no page lists every
client, and the lists do not query per row."""

from __future__ import annotations

import datetime as dt
import re
import secrets as stdlib_secrets
from typing import Any

from django.contrib import admin
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, IDToken, RefreshToken, set_token_value

from tests.base import BrainTestCase

TOKEN_ADMINS = ("accesstoken", "refreshtoken", "idtoken")


class TokenAdminScaleTests(BrainTestCase):
    def setUp(self) -> None:
        user = self.charlie.user
        user.is_superuser = True
        user.save(update_fields=["is_superuser"])
        self.client.force_login(user)
        self.made = 0

    def add_clients(self, n: int) -> AccessToken:
        """``n`` clients, each with an ID token, an access token and a refresh token of a member."""
        token: AccessToken | None = None
        for _ in range(n):
            self.made += 1
            who = (self.alice, self.bob)[self.made % 2].user
            application = Application.objects.create(
                name=f"Agent {self.made}", client_type="public", authorization_grant_type="authorization-code",
                redirect_uris="https://agent.example/cb",
            )  # fmt: skip
            expires = timezone.now() + dt.timedelta(hours=1)
            id_token = IDToken.objects.create(user=who, application=application, expires=expires, scope="openid")
            token = AccessToken(user=who, application=application, id_token=id_token, scope="mcp", expires=expires)
            set_token_value(token, stdlib_secrets.token_urlsafe(32))
            token.save()
            refresh = RefreshToken(user=who, application=application, access_token=token)
            set_token_value(refresh, stdlib_secrets.token_urlsafe(32))
            refresh.save()
        assert token is not None
        return token

    def get(self, url: str) -> tuple[str, int]:
        with CaptureQueriesContext(connection) as captured:
            response = self.client.get(url)
        assert response.status_code == 200, url
        return response.content.decode(), len(captured.captured_queries)

    def test_the_token_admins_are_still_registered_and_read_only(self) -> None:
        request = RequestFactory().get("/admin/")
        request.user = self.charlie.user
        for model in (AccessToken, RefreshToken, IDToken):
            model_admin: Any = admin.site._registry[model]
            assert model_admin.has_view_permission(request), model
            assert not model_admin.has_add_permission(request), model
            assert not model_admin.has_change_permission(request), model
            assert not model_admin.has_delete_permission(request), model
        for model in (AccessToken, RefreshToken):
            model_admin = admin.site._registry[model]
            assert "revoke_tokens" in model_admin.actions

    def test_no_list_filters_or_queries_per_client(self) -> None:
        self.add_clients(2)
        few = {name: self.get(f"/admin/oauth2_provider/{name}/")[1] for name in TOKEN_ADMINS}
        self.add_clients(6)
        for name in TOKEN_ADMINS:
            body, many = self.get(f"/admin/oauth2_provider/{name}/")
            assert "Agent 8" in body, name
            assert "By application" not in body, name
            assert "application__id__exact" not in body, name
            assert many == few[name], name

    def test_a_token_page_renders_no_choice_of_every_client_or_token(self) -> None:
        token = self.add_clients(12)
        pages = {
            "accesstoken": token.pk,
            "refreshtoken": RefreshToken.objects.get(access_token=token).pk,
            "idtoken": token.id_token_id,
        }
        for name, pk in pages.items():
            body, _ = self.get(f"/admin/oauth2_provider/{name}/{pk}/change/")
            assert len(re.findall(r"<option\b", body)) < 12, name
            assert "Agent 12" in body, name  # the chosen client is named beside its id
