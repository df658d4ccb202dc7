"""Invitation links, the Security page and single sign-on."""

from __future__ import annotations

from django.urls import path

from accounts import oidc, views

app_name = "accounts"
urlpatterns = [
    path("invite/accept", views.invitation_set_password, name="invitation-accept"),
    path("invite/<str:token>", views.invitation, name="invitation"),
    path("account/security/", views.security, name="security"),
    path("account/password/", views.PasswordChange.as_view(), name="password-change"),
    path("sso/start", oidc.sign_in, name="oidc-start"),
    path("sso/callback", oidc.callback, name="oidc-callback"),
]
