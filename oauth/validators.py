"""The oauthlib request validator, narrowed to what Brain issues tokens for.

Every authorization code (and so every token minted from it, refreshed ones included)
is bound to the person MCP endpoint as its RFC 8707 resource: a client that names no
resource still gets a token good only for ``/api/mcp``; a client that names any other
resource is refused with ``invalid_target``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from oauth.config import mcp_resource


def resource_refusal(resources: list[str]) -> str | None:
    """Why ``resources`` cannot be granted here, or None when they can (empty means ours)."""
    ours = mcp_resource(settings.BRAIN_BASE_URL)
    foreign = [resource for resource in resources if resource.rstrip("/") != ours]
    if foreign:
        return f"This server issues tokens only for the resource {ours}."
    return None


class BrainOAuth2Validator(OAuth2Validator):
    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        requested = list(getattr(request, "resource", None) or [])
        refusal = resource_refusal(requested)
        if refusal is not None:
            raise CustomOAuth2Error(error="invalid_target", description=refusal, request=request)
        request.resource = [mcp_resource(settings.BRAIN_BASE_URL)]
        return super()._create_authorization_code(request, code, expires)
