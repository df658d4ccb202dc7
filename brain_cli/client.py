"""The HTTP side of the CLI: one call, one line of error, one exit code per kind of failure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

import httpx2 as httpx

from brain_cli.config import Settings

# Exit codes (documented in docs/api.md and ``brain --help``).
OK = 0
REFUSED = 1  # the server refused the request (invalid input, conflict)
USAGE = 2  # click's own: a bad option or argument
UNAUTHORISED = 3  # no setup, or the token is unknown, expired, revoked or lacks the scope
NOT_FOUND = 4  # not found (or not visible to you: the two look the same)
UNAVAILABLE = 5  # the server cannot be reached, or failed
RATE_LIMITED = 6  # over your rate window; retry later


class CliError(Exception):
    """A failure to print as one line, with its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _failure(response: httpx.Response) -> CliError:
    message, request_id = response.reason_phrase or f"HTTP {response.status_code}", None
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    status = response.status_code
    if not isinstance(error, dict):
        # Not Brain's error body: a proxy in front of it answered (busy, or Brain is down), or the
        # address is not Brain's API at all — then never "not found", which reads as the memory's.
        if status == 429:
            return CliError(f"rate limited by {response.url.host}; retry later", RATE_LIMITED)
        if status == 413:  # a proxy's body limit (nginx's is 1 MB by default), below Brain's own
            return CliError(f"{response.url.host} refused the request as too large (HTTP 413): its proxy's "
                            "upload limit is below Brain's; ask the operator to raise it", REFUSED)  # fmt: skip
        if status >= 500:
            return CliError(f"{response.url.host} answered HTTP {status}: is Brain running behind it?", UNAVAILABLE)
        return CliError(
            f"{response.url} did not answer as Brain does (HTTP {status}): is the URL Brain's?", UNAVAILABLE
        )
    message = str(error.get("message") or message)
    request_id = error.get("request_id")
    suffix = f" (request {request_id})" if request_id else ""
    if status == 401 or (status == 403 and error.get("code") != "forbidden"):
        code = UNAUTHORISED  # no, a bad or a too narrow token (insufficient_scope)
        if status == 401:
            message = f"{message} Run `brain setup` with a valid personal token."
    elif status == 403:
        code = REFUSED  # the token is fine; the service refused this action to this person
    elif status == 404:
        code = NOT_FOUND
    elif status == 429:
        code = RATE_LIMITED
        message = f"{message} Retry after {response.headers.get('Retry-After', '?')} s."
    elif status >= 500:
        code = UNAVAILABLE
    else:
        code = REFUSED
    return CliError(f"{message}{suffix}", code)


class Api:
    """REST v1 of one server, as one person (their personal token)."""

    def __init__(self, settings: Settings, *, timeout: float = 60.0) -> None:
        self.base = settings.url + "/api/v1"
        self.http = httpx.Client(
            headers={"Authorization": f"Bearer {settings.token}", "User-Agent": "brain-cli"}, timeout=timeout
        )

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, self.base + path, **kwargs)
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise CliError(f"cannot reach {self.base}: {type(error).__name__}", UNAVAILABLE) from None
        self._check(response)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):  # every v1 operation answers an object
            raise CliError(
                f"{self.base} did not answer as Brain does (HTTP {response.status_code}): is the URL Brain's?",
                UNAVAILABLE,
            )
        return answer

    def stream(self, path: str, *, media_type: str, headers: dict[str, str] | None = None) -> Iterator[bytes]:
        """The body of ``GET path``, which must be ``media_type`` (a login page or a proxy's
        answer with status 200 would otherwise be written over a previous export). The
        answer's headers (names lower-cased) are put in ``headers`` before the first chunk."""
        try:
            with self.http.stream("GET", self.base + path) as response:
                if response.status_code >= 300:
                    response.read()
                self._check(response)
                received = response.headers.get("Content-Type", "").split(";")[0].strip()
                if received != media_type:
                    raise CliError(
                        f"{self.base} answered {received or 'no content type'}, not {media_type}: is the URL Brain's?",
                        UNAVAILABLE,
                    )
                if headers is not None:
                    headers.update({name.lower(): value for name, value in response.headers.items()})
                yield from response.iter_bytes()
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise CliError(f"cannot reach {self.base}: {type(error).__name__}", UNAVAILABLE) from None

    def _check(self, response: httpx.Response) -> None:
        """``CliError`` for a refusal, and for a redirect: requests are not re-sent to another
        address with the token (an http:// URL answered by https:// is set up wrong, not followed)."""
        if 300 <= response.status_code < 400:
            where = response.headers.get("Location", "another address")
            raise CliError(
                f"{self.base} redirects to {where}: run `brain setup` with the address Brain answers at", UNAVAILABLE
            )
        if response.status_code >= 400:
            raise _failure(response)

    def upload(self, name: str, handle: BinaryIO, fields: dict[str, str]) -> Any:
        return self.call("POST", "/uploads", files={"file": (name, handle)}, data=fields)
