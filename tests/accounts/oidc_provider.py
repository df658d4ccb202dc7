"""A small OpenID Connect provider on loopback, for single sign-on tests.

Authorization code flow with PKCE (S256) and nonce, RS256 ID tokens signed by a key made
per run, a JWKS endpoint, a userinfo endpoint, and client_secret_post at the token
endpoint. ``person`` is whoever "signs in" at the provider next. Each check a real provider
makes that matters to the relying party is made here too (redirect URI, client secret,
code single use, PKCE verifier), so a client that skipped one would fail the test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.fakes import respond

CLIENT_ID = "brain-test"
CLIENT_SECRET = "test-client-secret-not-real"
KEY_ID = "test-key-1"


class Provider:
    """Start with ``with Provider() as provider:``; endpoints hang off ``provider.base``."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.person: dict[str, Any] = {"sub": "u-1", "email": "someone@example.com", "email_verified": True}
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.issuer_override: str | None = None
        self.audience_override: str | None = None
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.issuer = self.base

    def __enter__(self) -> Provider:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def settings(self) -> dict[str, Any]:
        """Django settings pointing a relying party at this provider."""
        return {
            "BRAIN_OIDC_ENABLED": True,
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.base}/authorize",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.base}/token",
            "OIDC_OP_USER_ENDPOINT": f"{self.base}/userinfo",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.base}/jwks",
            "OIDC_OP_ISSUER": self.issuer,
        }

    # ------------------------------------------------------------------ protocol

    def authorize(self, query: dict[str, str]) -> str:
        """The provider's consent, given at once: where the browser is sent back to."""
        assert query["response_type"] == "code"
        assert query["client_id"] == CLIENT_ID
        assert query["code_challenge_method"] == "S256"
        assert "openid" in query["scope"].split()
        code = secrets.token_urlsafe(16)
        self.codes[code] = {**query, "person": dict(self.person)}
        return f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return 401, {"error": "invalid_client"}
        grant = self.codes.pop(form.get("code", ""), None)  # single use
        if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if challenge != grant["code_challenge"]:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        now = int(time.time())
        person = grant["person"]
        claims = {
            "iss": self.issuer_override or self.issuer,
            "aud": self.audience_override or CLIENT_ID,
            "sub": person["sub"],
            "iat": now,
            "exp": now + 300,
            "nonce": grant.get("nonce"),
            "email": person["email"],
        }
        id_token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": KEY_ID})
        access_token = secrets.token_urlsafe(24)
        self.tokens[access_token] = person
        return 200, {"access_token": access_token, "token_type": "Bearer", "expires_in": 300, "id_token": id_token}

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": KEY_ID, "use": "sig", "alg": "RS256"}]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def _json(self, status: int, body: dict[str, Any]) -> None:
                respond(self, status, "application/json", json.dumps(body).encode())

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {key: values[0] for key, values in parse_qs(url.query).items()}
                if url.path == "/authorize":
                    self.send_response(302)
                    self.send_header("Location", provider.authorize(query))
                    self.end_headers()
                elif url.path == "/jwks":
                    self._json(200, provider.jwks())
                elif url.path == "/userinfo":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    person = provider.tokens.get(token)
                    if person is None:
                        self._json(401, {"error": "invalid_token"})
                    else:
                        self._json(200, person)
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = {key: values[0] for key, values in parse_qs(self.rfile.read(length).decode()).items()}
                if urlsplit(self.path).path == "/token":
                    self._json(*provider.token(form))
                else:
                    self._json(404, {"error": "not_found"})

        return Handler
