"""OAuth 2.1 endpoints narrowed for Brain, and the member's "Connected apps" page.

django-oauth-toolkit does the protocol; these subclasses add Brain's rules:

- consent: only an *active member* can complete it (a valid client and a valid login are
  not enough), and only for Brain's own MCP resource;
- registration: open to MCP clients (RFC 7591) but only for the authorization-code grant,
  and rate limited per client address;
- connected apps: a member sees the apps holding their tokens and can disconnect one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import (
    AuthorizationView,
    OAuthProtectedResourceMetadataView,
    RevokeTokenView,
    TokenView,
)
from oauth2_provider.views.dynamic_client_registration import (
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
)
from oauthlib.common import urldecode

from brain.callers import MCP_SCOPES
from brain.inputs import InputRefused, parse_json
from brain.ratelimit import RateLimited, hit_address
from brain.text.secrets import NulRefused, SecretRefused, refuse
from grants.audit import audit_record
from grants.decorators import member_required
from grants.models import Member
from grants.principals import principal_for_user
from oauth.config import mcp_resource
from oauth.selectors import connections_for
from oauth.services import application_self_remove, connection_revoke
from oauth.validators import nonce_refusal, pkce_challenge_refusal, resource_refusal

REGISTRABLE_GRANT_TYPES = {"authorization_code", "refresh_token"}
Application = get_application_model()


def _over_address_limit(request: HttpRequest, rate_class: str, description: str) -> JsonResponse | None:
    """Count ``request`` in its address's ``rate_class`` window; over it, the OAuth-shaped 429
    (``Retry-After``, never cached), else None."""
    try:
        hit_address(request, rate_class)
    except RateLimited as limited:
        body = {"error": "rate_limited", "error_description": description}
        headers = {"Retry-After": str(limited.retry_after), "Cache-Control": "no-store"}
        return JsonResponse(body, status=429, headers=headers)
    return None


def _query_decodes(request: HttpRequest) -> bool:
    """Whether oauthlib can decode the request's query string: it re-reads the query itself and
    raises on what Django tolerates ("%zz"), which was a server error for anyone."""
    try:
        urldecode(urlsplit(request.get_full_path()).query)
    except ValueError:
        return False
    return True


def _unreadable_query(request: HttpRequest) -> JsonResponse | None:
    """RFC 6749 §5.2's ``invalid_request`` for a query string oauthlib cannot decode."""
    if _query_decodes(request):
        return None
    body = {"error": "invalid_request", "error_description": "The query string is not valid URL encoding."}
    return JsonResponse(body, status=400, headers={"Cache-Control": "no-store"})


def _token_request_refused(request: HttpRequest) -> JsonResponse | None:
    """What the token and revocation endpoints refuse before the toolkit sees a request: over
    the address's ``token`` window (each may check a client secret with the slow hash), or a
    query string oauthlib cannot decode."""
    refused = _over_address_limit(request, "token", "Too many token requests; try again shortly.")
    return refused if refused is not None else _unreadable_query(request)


class BrainTokenView(TokenView):
    """The token endpoint, for the grants this server offers and nothing else, rate limited
    per client address (class ``token``).

    oauthlib checks a password grant's username and password before it checks whether the
    grant is allowed: with any public client id, /oauth/token/ answered a right password
    differently from a wrong one — a second, unthrottled place to test passwords (OAuth 2.1
    removes the grant). The device grant was processed too. Anything but the authorization
    code and refresh grants is refused before the toolkit sees it.

    The limit comes first: a confidential client's secret is checked with the password
    hasher (PBKDF2, about 0.4 s of CPU on this machine), so a stream of wrong secrets for a
    known client id was a cheap way to keep every web worker busy.
    """

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        refused = _token_request_refused(request)
        if refused is not None:
            return refused
        grants = request.POST.getlist("grant_type")
        if len(grants) != 1 or grants[0] not in REGISTRABLE_GRANT_TYPES:
            offered = "authorization_code and refresh_token"
            body = {
                "error": "unsupported_grant_type",
                "error_description": f"This server issues tokens for {offered} only.",
            }
            return JsonResponse(body, status=400, headers={"Cache-Control": "no-store"})
        response: HttpResponseBase = super().post(request, *args, **kwargs)
        return response


class BrainRevokeView(RevokeTokenView):
    """RFC 7009 revocation, counted in the token endpoint's address window (a confidential
    client's secret is checked with the same slow hash) and refusing an unreadable query."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        refused = _token_request_refused(request)
        if refused is not None:
            return refused
        response: HttpResponseBase = super().post(request, *args, **kwargs)
        return response


class McpResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata of the MCP endpoint: the scopes its tools use, not every scope the
    server knows (a client asks for what ``scopes_supported`` lists when the challenge names none)."""

    def get_scopes_supported(self) -> list[str]:
        return sorted(MCP_SCOPES)


class ConsentView(AuthorizationView):
    """The authorization endpoint with Brain's consent screen."""

    template_name = "oauth/authorize.html"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # Signed-in but not an active member (deactivated, or a user with no member row):
        # refuse before any code can be minted, on GET and on POST alike.
        if request.user.is_authenticated and principal_for_user(request.user) is None:
            return render(request, "oauth/refused.html", status=403)
        if not _query_decodes(request):
            reason = "the address's query string is not valid URL encoding"
            return render(request, "oauth/refused.html", {"reason": reason}, status=400)
        client_ids = [*request.GET.getlist("client_id"), *request.POST.getlist("client_id")]
        if Application.objects.filter(client_id__in=client_ids, skip_authorization=True).exists():
            # The toolkit would mint a code with no consent page, no CSRF and no audit; Brain
            # asks every time. Only a row edited outside the admin can hold the flag.
            reason = "this client is set to skip the consent page, which Brain does not allow; ask an administrator"
            return render(request, "oauth/refused.html", {"reason": reason}, status=400)
        redirect_uris = [*request.GET.getlist("redirect_uri"), *request.POST.getlist("redirect_uri")]
        if any(_uri_unreadable(uri) for uri in redirect_uris):
            reason = "the redirect_uri is not a valid URI (its host or port cannot be read)"
            return render(request, "oauth/refused.html", {"reason": reason}, status=400)
        if request.method == "GET":
            refusal = resource_refusal(request.GET.getlist("resource"))
            if refusal is not None:
                return render(request, "oauth/refused.html", {"reason": refusal}, status=400)
            if "approval_prompt" in request.GET:
                # The person consents every time. The toolkit's approval_prompt=auto minted a code
                # on a GET (no form, no CSRF) whenever any token of the app covered the scopes,
                # whatever resource was asked: a client consented for MCP widened itself to
                # /api/v1, unaudited. The parameter is not OAuth's; it is dropped.
                without = request.GET.copy()
                del without["approval_prompt"]
                request.GET = without  # type: ignore[assignment]
        # On the consent form's POST too: its hidden fields can be edited (300 characters were a
        # database error, 3 a guessable verifier).
        # Both on a POST: the toolkit reads a challenge left out of the form from the query string.
        problem = pkce_challenge_refusal(request.GET) or nonce_refusal(request.GET)
        if problem is None and request.method == "POST":
            problem = pkce_challenge_refusal(request.POST) or nonce_refusal(request.POST)
        if problem is not None:
            return render(request, "oauth/refused.html", {"reason": problem}, status=400)
        response: HttpResponseBase = super().dispatch(request, *args, **kwargs)
        return response

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        descriptions = oauth2_settings.SCOPES
        context["scope_choices"] = [(scope, descriptions.get(scope, scope)) for scope in kwargs.get("scopes", [])]
        return context

    def get_form_kwargs(self) -> dict[str, Any]:
        """The person may narrow what the app asked for (one checkbox a scope), never widen it."""
        kwargs: dict[str, Any] = super().get_form_kwargs()
        # The marker tells "every box unticked" (no scope_choice sent) from a client without the boxes.
        if self.request.method == "POST" and "scope_choices_shown" in self.request.POST:
            data = self.request.POST.copy()
            requested = str(data.get("scope", "")).split()
            chosen = [scope for scope in data.getlist("scope_choice") if scope in requested]
            data["scope"] = " ".join(chosen)
            kwargs["data"] = data
        return kwargs

    def form_valid(self, form: Any) -> HttpResponse:
        if form.cleaned_data.get("allow") and not str(form.cleaned_data.get("scope", "")).strip():
            form.add_error(None, "Choose at least one thing the app may do, or cancel.")
            refused: HttpResponse = self.form_invalid(form)
            return refused
        response: HttpResponse = super().form_valid(form)
        member = principal_for_user(self.request.user)
        if form.cleaned_data.get("allow") and member is not None and "code=" in response.get("Location", ""):
            audit_record(
                actor=member,
                action="oauth.connect",
                target_type="oauth_app",
                target=str(form.cleaned_data.get("client_id", "")),
                metadata={"scopes": str(form.cleaned_data.get("scope", "")).split()},
            )
        return response


_LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


# RFC 7591 §2's human-readable and URL fields: each one string.
TEXT_METADATA = ("client_name", "client_uri", "logo_uri", "tos_uri", "policy_uri", "software_id", "software_version")
MAX_REDIRECT_URIS = 20
# A real client's metadata is a few hundred bytes; registration is open to anyone, so the body
# is bounded well below the general request limit before anything reads it.
MAX_REGISTRATION_BYTES = 64 * 1024


def _uri_unreadable(uri: str) -> bool:
    """Whether ``uri`` cannot be taken apart (an unbalanced IPv6 bracket, a port past 65535 or
    not a number): the toolkit reads ``.port`` unguarded, a server error at authorization."""
    try:
        parts = urlsplit(uri)
        parts.hostname  # noqa: B018 — parsing is what is being tried
        parts.port  # noqa: B018
    except ValueError:
        return True
    return False


def _metadata_body(request: HttpRequest) -> dict[str, Any] | JsonResponse:
    """The registration request's metadata object, or the ``invalid_client_metadata`` answer."""

    def invalid(reason: str) -> JsonResponse:
        return JsonResponse({"error": "invalid_client_metadata", "error_description": reason}, status=400)

    if len(request.body) > MAX_REGISTRATION_BYTES:
        return invalid(f"the client metadata is over {MAX_REGISTRATION_BYTES // 1024} KB")
    try:
        metadata = parse_json(request.body)
    except InputRefused as refused:
        return invalid(str(refused))
    if not isinstance(metadata, dict):
        return invalid("send a JSON object")
    return metadata


def _redirect_refusal(uri: str) -> str | None:
    """RFC 8252 + 9700: https, plain http only to a loopback address, or an app's own scheme.

    An app's own scheme is one the operator allows (``BRAIN_OAUTH_REDIRECT_SCHEMES``: Cursor's
    ``cursor``, VS Code's ``vscode``); the toolkit refuses any other.
    """
    if _uri_unreadable(uri):
        return f"redirect URI {uri[:100]!r} is not a valid URI (its host or port cannot be read)"
    parts = urlsplit(uri)
    hostname = parts.hostname
    scheme = parts.scheme.lower()
    if scheme == "https" and hostname:
        return None
    if scheme == "http" and hostname in _LOOPBACK_HOSTS:
        return None
    allowed = {str(s).lower() for s in settings.OAUTH2_PROVIDER.get("ALLOWED_REDIRECT_URI_SCHEMES", [])}
    if scheme not in ("http", "https", "javascript", "data", "file") and scheme in allowed:
        return None
    return f"redirect URI {uri[:100]!r} refused: use https, or plain http only to a loopback address"


def refused_metadata(metadata: dict[str, Any], current: Any = None) -> str | None:
    """Why client metadata may not be stored, or None.

    Every string passes the secret detector (client names and URIs are shown on the consent
    page and in Connected apps); redirect URIs follow RFC 8252; only the authorization code
    and refresh grants are offered. ``current`` (an update, RFC 7592) may not be widened:
    no new grant type, no other client authentication, no redirect URI it did not have.
    """
    for name in TEXT_METADATA:
        # RFC 7591 §2: strings. A dict or a nested list was stored as its repr, past the detector.
        # null too: the toolkit stored a null client_name into a NOT NULL column (a 500).
        if name in metadata and not isinstance(metadata[name], str):
            return f"{name} must be a string (leave it out rather than send null)"
    for name, value in metadata.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(value, list) and isinstance(item, list | dict):
                return f"{str(name)[:64]} must be a list of strings"
            if isinstance(item, str):
                try:
                    refuse(item, field=str(name)[:64])
                except (SecretRefused, NulRefused) as refusal:
                    return str(refusal)
    grant_types = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or not set(map(str, grant_types)) <= REGISTRABLE_GRANT_TYPES:
        return "Only the authorization_code and refresh_token grant types are offered."
    redirect_uris = metadata.get("redirect_uris", [])
    if not isinstance(redirect_uris, list):
        return "redirect_uris must be a list"
    if len(redirect_uris) > MAX_REDIRECT_URIS:
        return f"at most {MAX_REDIRECT_URIS} redirect URIs a client"
    for uri in redirect_uris:
        if not isinstance(uri, str) or any(character.isspace() for character in uri):
            # The toolkit stores the list space-separated: "http://127.0.0.1/cb http://evil/cb"
            # passed as one loopback URI and came back as two, the second plain http anywhere.
            return "each redirect URI is one string with no spaces in it"
        problem = _redirect_refusal(str(uri))
        if problem is not None:
            return problem
    if current is not None:
        if set(map(str, redirect_uris)) - set(current.redirect_uris.split()):
            return "an update cannot add redirect URIs; register a new client instead"
        # Left out, the toolkit would default it to client_secret_basic: a public client
        # would silently become confidential. So an update states it, unchanged.
        method = metadata.get("token_endpoint_auth_method")
        current_method = "none" if current.client_type == "public" else "client_secret_basic"
        if method is None:
            return f"an update must state token_endpoint_auth_method ({current_method!r}; it cannot change)"
        if (method == "none") != (current_method == "none"):
            return "an update cannot change how the client authenticates"
    return None


class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration for MCP clients: authorization code (+ refresh) only."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refused = _over_address_limit(request, "register", "Too many registrations; try again shortly.")
        if refused is not None:
            return refused
        metadata = _metadata_body(request)
        if isinstance(metadata, JsonResponse):
            return metadata
        reason = refused_metadata(metadata)
        if reason is not None:
            return JsonResponse({"error": "invalid_client_metadata", "error_description": reason}, status=400)
        response: HttpResponse = super().post(request, *args, **kwargs)
        return response


@require_http_methods(["GET"])
@member_required
def connected_apps(request: HttpRequest, member: Member) -> HttpResponse:
    context = {"connections": connections_for(member), "mcp_url": mcp_resource(settings.BRAIN_BASE_URL)}
    return render(request, "oauth/connected_apps.html", context)


@require_POST
@member_required
def connected_app_revoke(request: HttpRequest, member: Member, application_id: int) -> HttpResponse:
    try:
        revoked = connection_revoke(actor=member, application_id=application_id)
    except ObjectDoesNotExist as exc:
        raise Http404 from exc
    messages.success(request, f"Disconnected: {revoked} token(s) revoked. The app must be connected again to work.")
    return redirect("oauth:connected-apps")


class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """RFC 7592 client configuration; an update passes the same metadata rules as registration."""

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        auth = self._authenticate_registration_request(request, client_id)
        if isinstance(auth, HttpResponse):
            return auth
        metadata = _metadata_body(request)
        if isinstance(metadata, JsonResponse):
            return metadata
        reason = refused_metadata(metadata, current=auth.application)
        if reason is not None:
            return JsonResponse({"error": "invalid_client_metadata", "error_description": reason}, status=400)
        response: HttpResponse = super().put(request, client_id, *args, **kwargs)
        return response

    def delete(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        """The client removes itself: its tokens revoked, the removal audited (the toolkit's delete
        removed it silently)."""
        auth = self._authenticate_registration_request(request, client_id)
        if isinstance(auth, HttpResponse):
            return auth
        application_self_remove(application_id=auth.application.pk)
        return HttpResponse(status=204)
