"""django-oauth-toolkit's routes, mounted where MCP clients look for them.

The namespace must be ``oauth2_provider``: the toolkit reverses its own route names to
build the discovery documents. Only what Brain offers is mounted — no device flow, no
OIDC, no introspection, no application-management pages (registration is RFC 7591, and
disconnecting lives on the Connected apps page and in the admin).
"""

from __future__ import annotations

from django.urls import path
from oauth2_provider import views as dot

from oauth import views
from oauth.config import MCP_PATH

app_name = "oauth2_provider"
urlpatterns = [
    # RFC 8414 and RFC 9728 documents at the origin's root (the issuer has no path).
    path(".well-known/oauth-authorization-server", dot.OAuthServerMetadataView.as_view(), name="oauth-server-metadata"),
    path(
        ".well-known/oauth-protected-resource",
        views.McpResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource" + MCP_PATH,
        views.McpResourceMetadataView.as_view(),
        name="oauth-resource-metadata-mcp",
    ),
    path("oauth/authorize/", views.ConsentView.as_view(), name="authorize"),
    path("oauth/token/", views.BrainTokenView.as_view(), name="token"),
    path("oauth/revoke/", views.BrainRevokeView.as_view(), name="revoke-token"),
    path("oauth/register/", views.RegistrationView.as_view(), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        views.RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]
