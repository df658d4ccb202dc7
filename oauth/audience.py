"""Which credentials each HTTP API accepts: one table, read by every API's authentication.

An OAuth access token carries scopes (what the person consented to) and resources (RFC
8707: which API it was issued for). A token is accepted only by an API whose row names
both its resource and its scope; personal API tokens (``bmt_…``) only where the row says
so. Anything else is answered as if no credential was sent (401), never with a hint.

The MCP endpoints authenticate in ``mcp_api.auth`` against the same table (``/api/mcp``
row); there the scope then projects the tool list rather than gating the endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest
from oauth2_provider.oauth2_validators import validate_resource_as_url_prefix

from grants.models import Member
from oauth.config import MCP_PATH, MEMORY_API_PATH
from oauth.tokens import token_holder


@dataclass(frozen=True)
class Audience:
    """What one API accepts: OAuth tokens bound to ``resource`` carrying ``scope`` (when
    ``resource`` is set), and personal API tokens (when ``personal_tokens``)."""

    resource: str | None
    scope: str | None
    personal_tokens: bool


# Longest prefix first. Every route under /api/ and /prompt-capsules/ must match a row
# (tests/oauth/test_audience.py walks the URL conf to prove it).
AUDIENCES: tuple[tuple[str, Audience], ...] = (
    ("/api/build/mcp", Audience(resource=None, scope=None, personal_tokens=False)),  # build credentials only
    (MCP_PATH, Audience(resource=MCP_PATH, scope=None, personal_tokens=False)),
    (MEMORY_API_PATH + "/", Audience(resource=MEMORY_API_PATH, scope="memory", personal_tokens=True)),
    ("/prompt-capsules/", Audience(resource=MEMORY_API_PATH, scope="memory", personal_tokens=True)),
    # Uploading and reading captures: personal tokens only — no OAuth resource covers it yet.
    ("/api/sources", Audience(resource=None, scope=None, personal_tokens=True)),
    ("/api/builds/", Audience(resource=None, scope=None, personal_tokens=False)),  # the signed-in session only
)


AUDIENCES_BY_PATH = dict(AUDIENCES)


def audience_for(path: str) -> Audience | None:
    """The row for ``path`` (None: not an API that takes bearer credentials)."""
    for prefix, audience in AUDIENCES:
        if path == prefix or path.startswith(prefix.rstrip("/") + "/") or path == prefix.rstrip("/"):
            return audience
    return None


def oauth_token_fits(audience: Audience, scope: str, resources: list[str]) -> bool:
    """Whether a token of ``scope`` bound to ``resources`` may call an API of ``audience``."""
    if audience.resource is None:
        return False
    if audience.scope is not None and audience.scope not in scope.split():
        return False
    ours = settings.BRAIN_BASE_URL + audience.resource
    return any(validate_resource_as_url_prefix(ours, [resource]) for resource in resources)


def member_for(request: HttpRequest, raw_token: str | None) -> Member | None:
    """The member behind ``raw_token`` if this request's API accepts that credential, else None."""
    if raw_token is None:
        return None
    audience = audience_for(request.path)
    if audience is None:
        return None
    if audience.personal_tokens:
        from memory.services import api_token_member

        member = api_token_member(raw_token)
        if member is not None:
            return member
    found = token_holder(raw_token)
    if found is None:
        return None
    holder, scope, resources = found
    return holder if oauth_token_fits(audience, scope, resources) else None
