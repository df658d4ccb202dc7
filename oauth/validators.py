"""The oauthlib request validator, narrowed to what Brain issues tokens for.

Every authorization code (and so every token minted from it, refreshed ones included)
is bound to RFC 8707 resources of this deployment: the ones the client named among
``/api/mcp`` and ``/api/memory``, or ``/api/mcp`` when it named none. A client naming any
other resource is refused with ``invalid_target``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from oauth.config import MEMORY_API_PATH, mcp_resource


def resource_refusal(resources: list[str]) -> str | None:
    """Why ``resources`` cannot be granted here, or None when they can (empty means the MCP endpoint).

    Brain's protected resources: the MCP endpoint and the memory REST API.
    """
    ours = mcp_resource(settings.BRAIN_BASE_URL)
    allowed = {ours, settings.BRAIN_BASE_URL + MEMORY_API_PATH}
    foreign = [resource for resource in resources if resource.rstrip("/") not in allowed]
    if foreign:
        return (
            f"This server issues tokens only for the resources {ours} and {settings.BRAIN_BASE_URL}{MEMORY_API_PATH}."
        )
    return None


class BrainOAuth2Validator(OAuth2Validator):
    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        requested = list(getattr(request, "resource", None) or [])
        refusal = resource_refusal(requested)
        if refusal is not None:
            raise CustomOAuth2Error(error="invalid_target", description=refusal, request=request)
        request.resource = requested or [mcp_resource(settings.BRAIN_BASE_URL)]
        return super()._create_authorization_code(request, code, expires)
