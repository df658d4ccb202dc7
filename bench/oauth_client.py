"""Connect an agent the way a person does: register, sign in, consent, exchange the code.

Used by the conformance runner and the MCP throughput benchmark to get a real person
token through the real OAuth 2.1 flow (RFC 7591 registration, PKCE S256, the consent
page, the token endpoint) against a running server.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import requests

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never visited: the code is read off the redirect


@dataclass
class Connection:
    base_url: str
    access_token: str
    client_id: str
    browser: requests.Session


def connect(base_url: str, username: str, password: str, *, client_name: str = "Brain bench") -> Connection:
    """Run the whole flow as ``username``; raise ``RuntimeError`` naming the step that failed."""
    registered = requests.post(
        f"{base_url}/oauth/register/",
        json={"client_name": client_name, "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"},
        timeout=30,
    )
    if registered.status_code != 201:
        raise RuntimeError(f"registration failed: HTTP {registered.status_code} {registered.text[:200]}")
    client_id = registered.json()["client_id"]

    browser = requests.Session()
    browser.get(f"{base_url}/login/", timeout=30)
    signed_in = browser.post(
        f"{base_url}/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": browser.cookies.get("csrftoken", "")},
        headers={"Referer": f"{base_url}/login/"},
        allow_redirects=False,
        timeout=30,
    )
    if signed_in.status_code != 302:
        raise RuntimeError(f"sign-in as {username} failed: HTTP {signed_in.status_code}")

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "scope": "corpus:read",
        "state": secrets.token_urlsafe(8), "code_challenge": challenge, "code_challenge_method": "S256",
        "resource": f"{base_url}/api/mcp",
    })  # fmt: skip
    authorize_url = f"{base_url}/oauth/authorize/?{query}"
    consent = browser.get(authorize_url, timeout=30)
    if consent.status_code != 200:
        raise RuntimeError(f"consent page failed: HTTP {consent.status_code}")
    fields = {name: unescape(value) for name, value in
              re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', consent.text)}  # fmt: skip
    fields["allow"] = "Authorize"
    form: dict[str, str | list[str]] = {
        **fields,
        "scope_choice": re.findall(r'name="scope_choice" value="([^"]+)" checked', consent.text),  # left ticked
    }
    approved = browser.post(authorize_url, data=form, headers={"Referer": authorize_url}, allow_redirects=False,
                            timeout=30)  # fmt: skip
    code = parse_qs(urlsplit(approved.headers.get("Location", "")).query).get("code", [""])[0]
    if approved.status_code != 302 or not code:
        raise RuntimeError(f"consent failed: HTTP {approved.status_code}")

    exchange = {
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "client_id": client_id,
        "code_verifier": verifier, "resource": f"{base_url}/api/mcp",
    }  # fmt: skip
    token = requests.post(f"{base_url}/oauth/token/", data=exchange, timeout=30)
    if token.status_code != 200:
        raise RuntimeError(f"token exchange failed: HTTP {token.status_code} {token.text[:200]}")
    return Connection(base_url, token.json()["access_token"], client_id, browser)


def disconnect(connection: Connection) -> None:
    """Revoke the token at the RFC 7009 endpoint (a public client authenticates by client_id)."""
    requests.post(
        f"{connection.base_url}/oauth/revoke/",
        data={"token": connection.access_token, "client_id": connection.client_id},
        timeout=30,
    )
