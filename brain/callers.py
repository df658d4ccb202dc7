"""Who is calling: every bearer credential kind resolved in one place into one ``Caller``,
and the one table of what each API surface accepts.

Four kinds of bearer credential reach the APIs, each shown once and kept only as its
SHA-256 (``brain.bearer``; OAuth tokens by django-oauth-toolkit, also SHA-256 at rest):

==============  =========  ====================================================================
kind            prefix     what it is
==============  =========  ====================================================================
``person``      (none)     an OAuth 2.1 access token of a member: scopes + RFC 8707 resources
``personal``    ``bmt_``   a member's personal API token, with the scopes chosen at issuance
``question``    ``bqc_``   a question credential: ask and await, nothing else
``build``       ``bld_``   a build credential: reads, and the drafts of its one build
==============  =========  ====================================================================

Each app that mints a kind registers its resolver here at start-up (``register``), so this
module depends on no app above it. ``resolve(raw)`` answers the ``Caller`` behind a token,
or None for anything unknown, expired, revoked or held by an inactive member — one answer
for all of those. ``SURFACES`` says which kinds, scope and OAuth resource each API surface
requires; ``admits(surface, caller)`` applies it. MCP, the REST API, the legacy memory and
sources APIs and the prompt capsules all authenticate through these two functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpRequest

if TYPE_CHECKING:
    from builds.models import Build
    from grants.principals import Principal

PERSON = "person"
PERSONAL = "personal"
QUESTION = "question"
BUILD = "build"
SESSION = "session"  # a signed-in browser on the REST API (CSRF-checked)

SCOPE_CORPUS_READ = "corpus:read"
SCOPE_MEMORY = "memory"
SCOPE_SOURCES_WRITE = "sources:write"
SCOPE_BUILDS_WRITE = "builds:write"
ALL_SCOPES = frozenset({SCOPE_CORPUS_READ, SCOPE_MEMORY, SCOPE_SOURCES_WRITE, SCOPE_BUILDS_WRITE})
# The scopes some MCP tool asks for (tests/mcp check it is the catalogue's union): what the MCP
# resource's metadata advertises, so an agent does not ask a person for builds:write, which a
# token bound to /api/mcp can never use.
MCP_SCOPES = frozenset({SCOPE_CORPUS_READ, SCOPE_MEMORY, SCOPE_SOURCES_WRITE})

# The protected resources (RFC 8707) of this deployment, as paths under BRAIN_BASE_URL.
MCP_PATH = "/api/mcp"
MEMORY_API_PATH = "/api/memory"
REST_API_PATH = "/api/v1"


@dataclass(frozen=True)
class Caller:
    """Who is calling: principal, credential kind, scopes, OAuth resources, and the bound build."""

    principal: Principal
    kind: str
    scopes: frozenset[str] = frozenset()
    build: Build | None = None
    resources: tuple[str, ...] = ()

    @property
    def rate_key(self) -> str:
        """Rate windows are per principal: every credential of one person shares them."""
        return f"{type(self.principal).__name__.lower()}:{getattr(self.principal, 'pk', 'system')}"


Resolver = Callable[[str], "Caller | None"]
_RESOLVERS: dict[str, Resolver] = {}  # by prefix; '' is the OAuth access token (no prefix)


def register(prefix: str, resolver: Resolver) -> None:
    """Called by the app that mints tokens starting with ``prefix`` (from its ``AppConfig.ready``)."""
    _RESOLVERS[prefix] = resolver


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer`` header; never read from the query string."""
    header = str(request.META.get("HTTP_AUTHORIZATION", ""))
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def resolve(raw: str) -> Caller | None:
    """The caller behind ``raw``, or None (unknown, expired, revoked, inactive — all alike)."""
    for prefix, resolver in _RESOLVERS.items():
        if prefix and raw.startswith(prefix):
            return resolver(raw)
    oauth = _RESOLVERS.get("")
    return oauth(raw) if oauth is not None else None


# --------------------------------------------------------------------------- surfaces


@dataclass(frozen=True)
class Surface:
    """What one API surface requires of a caller.

    ``kinds``: the credential kinds it accepts at all. ``scope``: the scope a ``person``,
    ``personal`` or ``session`` caller must hold (None: none). ``resource``: the path an
    OAuth token must be bound to (RFC 8707); None refuses OAuth tokens here. ``also``:
    scopes required besides ``scope`` (opening a build mints a credential that reads the
    corpus, so it needs ``corpus:read`` too: no token mints one that reaches more than
    itself). Question and build credentials carry no scopes: their kind is their permission.
    """

    kinds: frozenset[str]
    scope: str | None = None
    resource: str | None = None
    also: frozenset[str] = frozenset()  # further scopes required with ``scope``


def _surface(
    kinds: set[str], scope: str | None = None, resource: str | None = REST_API_PATH, also: frozenset[str] = frozenset()
) -> Surface:
    return Surface(kinds=frozenset(kinds), scope=scope, resource=resource, also=also)


_READERS = {PERSON, PERSONAL, BUILD, SESSION}
_PEOPLE = {PERSON, PERSONAL, SESSION}

# The one table. REST operations are named ``<area>.<action>``; the MCP endpoints and the
# legacy APIs are rows too. tests/brain/test_scope_matrix.py checks every credential kind
# against every REST operation from this table and the URL conf.
SURFACES: dict[str, Surface] = {
    # MCP: the scopes project the tool list (mcp_api.tools) rather than gate the endpoint.
    "mcp.person": _surface({PERSON, QUESTION}, None, MCP_PATH),
    "mcp.build": _surface({BUILD}, None, None),
    # The memory REST API before v1, and the prompt capsules.
    "memory.legacy": _surface({PERSON, PERSONAL}, SCOPE_MEMORY, MEMORY_API_PATH),
    "capsules": _surface({PERSON, PERSONAL}, SCOPE_MEMORY, MEMORY_API_PATH),
    "sources.legacy": _surface({PERSONAL}, SCOPE_SOURCES_WRITE, None),
    "session.only": _surface({SESSION}, None, None),  # JSON for the web app's own pages
    # REST v1.
    "pages.read": _surface(_READERS, SCOPE_CORPUS_READ),
    "search": _surface(_READERS, SCOPE_CORPUS_READ),
    "figures.read": _surface(_READERS, SCOPE_CORPUS_READ),
    "sources.read": _surface(_READERS, SCOPE_CORPUS_READ),
    "sources.write": _surface(_PEOPLE, SCOPE_SOURCES_WRITE),
    "memory": _surface(_PEOPLE, SCOPE_MEMORY),
    "builds.write": _surface(_PEOPLE, SCOPE_BUILDS_WRITE, also=frozenset({SCOPE_CORPUS_READ})),
    # A build credential: its own build only. A person's token also needs corpus:read: a
    # build's status and diff show live page text, which builds:write alone never reads.
    "builds.own": _surface({*_PEOPLE, BUILD}, SCOPE_BUILDS_WRITE, also=frozenset({SCOPE_CORPUS_READ})),
    "questions": _surface({*_PEOPLE, QUESTION}, SCOPE_CORPUS_READ),
    "team": _surface(_PEOPLE, None),
    "export": _surface(_PEOPLE, SCOPE_CORPUS_READ),
}


def admits(surface: Surface, caller: Caller) -> bool:
    """Whether ``caller`` may use an endpoint of ``surface`` (the answer to a refusal is 401/403)."""
    if caller.kind not in surface.kinds:
        return False
    if caller.kind == PERSON and (surface.resource is None or not _bound_to(caller.resources, surface.resource)):
        return False
    if caller.kind in (PERSON, PERSONAL, SESSION) and surface.scope is not None:
        return surface.scope in caller.scopes and surface.also <= caller.scopes
    return True


def refusal_reason(surface: Surface, caller: Caller) -> str:
    """Why ``surface`` does not admit ``caller`` (a live credential), in words a client acts on:
    the resource an OAuth token bound elsewhere needs (not a scope it already holds), else the
    scopes missing, else that another kind of credential is needed. Every API's 403 says this."""
    bound_elsewhere = (
        caller.kind == PERSON and caller.kind in surface.kinds and surface.resource is not None
        and not _bound_to(caller.resources, surface.resource)
    )  # fmt: skip
    if bound_elsewhere:
        resource = settings.BRAIN_BASE_URL + str(surface.resource)
        return f"This OAuth token was issued for another resource; this endpoint needs one issued for {resource}."
    wanted = {*([surface.scope] if surface.scope else []), *surface.also}
    scopes = " and ".join(repr(scope) for scope in sorted(wanted))
    need = f"the scope(s) {scopes}" if scopes and caller.kind in surface.kinds else "another kind"
    return f"This credential ({caller.kind}) may not use this endpoint; it needs {need}."


def _bound_to(resources: tuple[str, ...], path: str) -> bool:
    from oauth2_provider.oauth2_validators import validate_resource_as_url_prefix

    ours = settings.BRAIN_BASE_URL + path
    return any(validate_resource_as_url_prefix(ours, [resource]) for resource in resources)


def caller_for(request: HttpRequest, surface: str) -> Caller | None:
    """The bearer caller of ``request`` if ``surface`` admits them, else None."""
    raw = bearer_token(request)
    if raw is None:
        return None
    caller = resolve(raw)
    return caller if caller is not None and admits(SURFACES[surface], caller) else None
