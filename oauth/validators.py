"""The oauthlib request validator, narrowed to what Brain issues tokens for.

Every authorization code (and so every token minted from it, refreshed ones included)
is bound to RFC 8707 resources of this deployment: the ones the client named among
``/api/mcp``, ``/api/memory`` and ``/api/v1``, or ``/api/mcp`` when it named none. A client naming any
other resource is refused with ``invalid_target``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db import transaction
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from grants.audit import audit_record
from oauth.config import MEMORY_API_PATH, REST_API_PATH, mcp_resource
from oauth.models import RedeemedCode


def resource_refusal(resources: list[str]) -> str | None:
    """Why ``resources`` cannot be granted here, or None when they can (empty means the MCP endpoint).

    Brain's protected resources: the MCP endpoint and the memory REST API.
    """
    base = settings.BRAIN_BASE_URL
    allowed = [mcp_resource(base), base + MEMORY_API_PATH, base + REST_API_PATH]
    foreign = [resource for resource in resources if resource.rstrip("/") not in allowed]
    if foreign:
        return f"This server issues tokens only for the resources {', '.join(allowed)}."
    return None


def _code_digest(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


class BrainOAuth2Validator(OAuth2Validator):
    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        requested = list(getattr(request, "resource", None) or [])
        refusal = resource_refusal(requested)
        if refusal is not None:
            raise CustomOAuth2Error(error="invalid_target", description=refusal, request=request)
        request.resource = requested or [mcp_resource(settings.BRAIN_BASE_URL)]
        return super()._create_authorization_code(request, code, expires)

    def _save_bearer_token(self, token: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        """Save the tokens; for a code exchange, remember the code (hashed) and what it started."""
        saved = super()._save_bearer_token(token, request, *args, **kwargs)
        if request.grant_type == "authorization_code" and getattr(request, "code", None):
            from oauth2_provider.models import get_access_token_model

            access = (
                get_access_token_model()
                .objects.filter(token_checksum=hashlib.sha256(token["access_token"].encode("utf-8")).hexdigest())
                .select_related("refresh_token")
                .first()
            )
            refresh = getattr(access, "refresh_token", None) if access is not None else None
            RedeemedCode.objects.update_or_create(
                code_sha256=_code_digest(request.code),
                defaults={
                    "application_id": request.client.pk,
                    "access_token_id": access.pk if access is not None else None,
                    "token_family": getattr(refresh, "token_family", None),
                },
            )
        return saved

    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        """A code seen before revokes everything issued from it, then fails like any bad code."""
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        redeemed = RedeemedCode.objects.filter(code_sha256=_code_digest(code), application_id=client.pk).first()
        if redeemed is not None:
            revoke_tokens_of(redeemed)
        return False


def revoke_tokens_of(redeemed: RedeemedCode) -> int:
    """Revoke the access token a code bought and every refresh token of its family; audited."""
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model

    AccessToken, RefreshToken = get_access_token_model(), get_refresh_token_model()
    revoked = 0
    with transaction.atomic():
        if redeemed.token_family is not None:
            for refresh in RefreshToken.objects.filter(token_family=redeemed.token_family, revoked__isnull=True):
                refresh.revoke()  # also deletes its access token
                revoked += 1
        if redeemed.access_token_id is not None:
            revoked += AccessToken.objects.filter(pk=redeemed.access_token_id).delete()[0]
        audit_record(
            actor=None, action="oauth.code_replay", target_type="oauth_application",
            target=str(redeemed.application_id), metadata={"revoked": revoked},
        )  # fmt: skip
    return revoked
