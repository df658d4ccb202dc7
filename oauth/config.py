"""The OAuth 2.1 configuration, derived from one value: the deployment's base URL.

Imported by ``brain.settings`` (so nothing here may import Django models) and by the
tests that point the issuer at a live test server. One function builds the whole
django-oauth-toolkit configuration so the issuer, the protected resource and the
authorization-server list can never disagree.
"""

from __future__ import annotations

from typing import Any

from brain.callers import MCP_PATH, MEMORY_API_PATH, REST_API_PATH

__all__ = ["MCP_PATH", "MEMORY_API_PATH", "REST_API_PATH", "mcp_resource", "provider_settings"]
SCOPES = {
    # A consent sentence states everything its scope allows (corpus:read writes nothing: tagging
    # a source is sources:write, on MCP as on REST).
    "corpus:read": "Read and search the pages and sources you can read yourself",
    "memory": "Recall and record your own memories and the team's shared ones",
    "sources:write": "Upload documents and tag sources, as you",
    "builds:write": "Open builds and propose page changes for a person to review, as you",
}
DEFAULT_SCOPES = ["corpus:read"]

ACCESS_TOKEN_SECONDS = 60 * 60
REFRESH_TOKEN_SECONDS = 30 * 24 * 60 * 60
AUTHORIZATION_CODE_SECONDS = 60


def mcp_resource(base_url: str) -> str:
    """The RFC 8707 resource identifier of the person MCP endpoint."""
    return base_url.rstrip("/") + MCP_PATH


def provider_settings(base_url: str, redirect_schemes: list[str]) -> dict[str, Any]:
    """The ``OAUTH2_PROVIDER`` setting for a deployment served at ``base_url``.

    Every RFC 9700 (OAuth security BCP) gate is on: S256 only, PKCE required, no implicit
    or password grant, no token in a query string, ``iss`` in the authorization response,
    tokens hashed at rest, exact redirect-URI matching and refresh-token reuse detection.
    """
    base = base_url.rstrip("/")
    return {
        "SCOPES": dict(SCOPES),
        "DEFAULT_SCOPES": list(DEFAULT_SCOPES),
        "OAUTH2_VALIDATOR_CLASS": "oauth.validators.BrainOAuth2Validator",
        "ACCESS_TOKEN_EXPIRE_SECONDS": ACCESS_TOKEN_SECONDS,
        "REFRESH_TOKEN_EXPIRE_SECONDS": REFRESH_TOKEN_SECONDS,
        "AUTHORIZATION_CODE_EXPIRE_SECONDS": AUTHORIZATION_CODE_SECONDS,
        "ROTATE_REFRESH_TOKEN": True,
        "REFRESH_TOKEN_REUSE_PROTECTION": True,
        "PKCE_REQUIRED": True,
        "REQUEST_APPROVAL_PROMPT": "force",
        "ALLOWED_REDIRECT_URI_SCHEMES": list(redirect_schemes),
        "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
        "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
        "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
        "OIDC_ISS_ENDPOINT": base,
        "DCR_ENABLED": True,
        # MCP clients register themselves before any person is involved; what protects the
        # corpus is the consent step (an active member) and the person's own grants.
        "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
        "OAUTH2_PROTECTED_RESOURCE_IDENTIFIER": mcp_resource(base),
        "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [base],
        "OAUTH2_PROTECTED_RESOURCE_BEARER_METHODS_SUPPORTED": ["header"],
        "OAUTH2_PROTECTED_RESOURCE_NAME": "Brain",
        "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
        "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
        "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
        "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
        "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
        "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
        "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    }
