"""The oauthlib request validator, narrowed to what Brain issues tokens for.

Every authorization code (and so every token minted from it, refreshed ones included)
is bound to RFC 8707 resources of this deployment: the ones the client named among
``/api/mcp``, ``/api/memory`` and ``/api/v1``, or ``/api/mcp`` when it named none. A client naming any
other resource is refused with ``invalid_target``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from django.conf import settings
from django.db import transaction
from oauth2_provider.models import get_grant_model
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


# RFC 7636 §4.1–4.2: a verifier is 43–128 unreserved characters; an S256 challenge is the
# base64url of a SHA-256 digest, 43 characters.
_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")
_S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")


def pkce_challenge_refusal(query: Any) -> str | None:
    """Why an authorization request's PKCE challenge is unusable, or None (a missing one, or the
    "plain" method, is the toolkit's to refuse, by redirect). Checked before the consent page and
    on its POST, whatever the method says: an over-long challenge was a database error when the
    person clicked Connect, a short one made the verifier easy to guess, and a method of "" or
    "S256 " once let either past this check."""
    challenge = query.get("code_challenge")
    method = query.get("code_challenge_method")
    if method is not None and method not in ("S256", "plain"):
        return "code_challenge_method must be S256 (RFC 7636)."
    # A "plain" challenge is the verifier itself (the toolkit then refuses the method).
    shape = _VERIFIER if method == "plain" else _S256_CHALLENGE
    if challenge is not None and not shape.fullmatch(challenge):
        return "code_challenge must be the 43-character base64url SHA-256 of the code verifier (RFC 7636)."
    return None


def nonce_refusal(query: Any) -> str | None:
    """Why an authorization request's OpenID ``nonce`` cannot be kept, or None: the grant
    stores it in 255 characters, and a longer one was a database error when the person
    clicked Connect (checked before the consent page and on its POST, like the challenge)."""
    limit = getattr(get_grant_model()._meta.get_field("nonce"), "max_length", None) or 255
    nonces = query.getlist("nonce") if hasattr(query, "getlist") else [query.get("nonce")]
    if any(nonce is not None and len(nonce) > limit for nonce in nonces):
        return f"nonce is at most {limit} characters."
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
        """A code seen before revokes everything issued from it (whichever client presents it
        again: any replay means the code leaked), then fails like any bad code. A verifier that
        is not RFC 7636's shape fails too. A code whose person is no longer an active member
        buys nothing."""
        verifier = getattr(request, "code_verifier", None)
        if verifier is not None and not _VERIFIER.fullmatch(str(verifier)):
            return False
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return _active_member(getattr(request, "user", None))
        redeemed = RedeemedCode.objects.filter(code_sha256=_code_digest(code)).first()
        if redeemed is not None:
            revoke_tokens_of(redeemed)
        return False

    def validate_refresh_token(self, refresh_token: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        """The toolkit's check, and the person still an active member: a member deactivated
        outside suspension (which revokes everything) must not refresh into new tokens."""
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        return bool(valid) and _active_member(getattr(request, "user", None))


def _active_member(user: Any) -> bool:
    from grants.principals import principal_for_user

    return user is not None and principal_for_user(user) is not None


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
