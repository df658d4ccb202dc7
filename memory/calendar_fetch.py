"""Fetch a subscribed calendar over HTTP(S) without letting the URL reach inside the network.

Contract of ``fetch_calendar``:

- only ``http`` and ``https`` (``webcal`` is read as ``https`` by ``subscription_url``); a URL
  with credentials in it is refused;
- every hop's host is resolved and **every** address it resolves to must be public (not
  private, loopback, link-local — the cloud metadata address 169.254.169.254 included —,
  shared, multicast, reserved or unspecified), unless ``allow_private`` (the setting
  ``BRAIN_CALENDAR_ALLOW_PRIVATE``) says otherwise. The connection then goes to the very
  address that was checked, so a second, different DNS answer cannot slip a private address
  in between the check and the connect (DNS rebinding);
- at most 3 redirects, each one checked as above; environment proxies are not used;
- ``If-None-Match`` / ``If-Modified-Since`` from the last fetch; 304 comes back as
  ``not_modified``; any other status than 200 or 304 is refused;
- 10-second socket timeouts, 30 seconds for the whole fetch, and at most 5 MB of body,
  read in chunks (a larger ``Content-Length`` is refused before reading).

Every refusal is ``FetchRefused`` (a ``MemoryInvalid``) whose message names the problem and
never repeats the URL (a private calendar URL is itself a secret).
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

from memory.classify import MemoryInvalid

MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 3
SOCKET_TIMEOUT = 10.0
TOTAL_SECONDS = 30.0
CHUNK = 64 * 1024
USER_AGENT = "Brain-Calendar/1"
_REDIRECTS = (301, 302, 303, 307, 308)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefused(MemoryInvalid):
    """A calendar URL or its answer that is not fetched or not accepted; the message says why."""


@dataclass(frozen=True)
class Fetched:
    """What the server answered: the body (empty when ``not_modified``) and its validators."""

    not_modified: bool
    body: bytes
    etag: str
    last_modified: str


def subscription_url(url: str) -> str:
    """``url`` checked and normalised for storing: ``webcal://`` becomes ``https://``.

    Raises ``FetchRefused`` for another scheme, credentials in the URL, no host or a bad port.
    Does not resolve the host (``check_host`` does).
    """
    text = (url or "").strip()
    if not text:
        raise FetchRefused("give the calendar's URL")
    if len(text) > 2000:
        raise FetchRefused("the URL may be at most 2,000 characters")
    if text.lower().startswith("webcal://"):
        text = "https://" + text[len("webcal://") :]
    _parts(text)
    return text


def check_subscription_url(url: str, *, allow_private: bool) -> str:
    """``subscription_url`` plus the host check of a fetch, for refusing a URL when it is added."""
    clean = subscription_url(url)
    _scheme, host, port = _parts(clean)
    check_host(host, port, allow_private=allow_private)
    return clean


def _parts(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL without credentials, else ``FetchRefused``."""
    if any(ord(c) < 33 for c in url):
        raise FetchRefused("the URL must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise FetchRefused("the URL could not be read (check its host and port)") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchRefused("only http, https and webcal URLs can be subscribed to")
    if parts.username is not None or parts.password is not None:
        raise FetchRefused("the URL must not carry a user name or password")
    if not parts.hostname:
        raise FetchRefused("the URL has no host")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80)


def _public(address: IPAddress) -> bool:
    """True for an address on the public internet (``is_global`` alone lets multicast through)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.teredo is not None or address.is_site_local:
            return False  # a tunnel to anywhere, or the deprecated site-local fec0::/10
        # An IPv4 address inside (::ffff:a.b.c.d, and 6to4's 2002:a.b.c.d::) is what is reached.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            address = embedded
    return address.is_global and not (
        address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_private
    )


def check_host(host: str, port: int, *, allow_private: bool) -> str:
    """Resolve ``host`` and return the address to connect to; ``FetchRefused`` when any is not public.

    All addresses must pass, not just one: which one a client picks is not ours to predict.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchRefused("the calendar's host could not be resolved") from exc
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        raise FetchRefused("the calendar's host could not be resolved")
    if not allow_private and not all(_public(address) for address in addresses):
        raise FetchRefused(
            "the calendar's host is not a public address (private, local and metadata addresses are refused)"
        )
    return str(addresses[0])


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to an address checked beforehand (the Host header keeps the name)."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """As ``_PinnedHTTPConnection``, with TLS verified against the host name, not the address."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def fetch_calendar(url: str, *, etag: str = "", last_modified: str = "", allow_private: bool = False) -> Fetched:
    """GET a calendar (see the module docstring for every rule); ``FetchRefused`` when refused."""
    deadline = time.monotonic() + TOTAL_SECONDS
    current = subscription_url(url)
    previous_scheme = ""
    for _hop in range(MAX_REDIRECTS + 1):
        if time.monotonic() > deadline:
            raise FetchRefused(f"the calendar took more than {int(TOTAL_SECONDS)} seconds to download")
        scheme, host, port = _parts(current)
        if previous_scheme == "https" and scheme == "http":
            raise FetchRefused("the calendar URL redirected from https to plain http")
        previous_scheme = scheme
        address = check_host(host, port, allow_private=allow_private)
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = _PinnedHTTPSConnection(host, port, address=address, timeout=SOCKET_TIMEOUT)
        else:
            connection = _PinnedHTTPConnection(host, port, address=address, timeout=SOCKET_TIMEOUT)
        parts = urlsplit(current)
        # Re-quote what a redirect may have given unquoted; http.client sends ASCII only.
        target = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe="!$%&'()*+,/:;=?@~")
        headers = {"User-Agent": USER_AGENT, "Accept": "text/calendar, */*;q=0.5", "Accept-Encoding": "identity"}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        # One deadline for the whole fetch: a server trickling a byte a second answers every read
        # within the socket timeout, so only a watchdog closing the socket ends it (it held a
        # web thread past 75 s).
        watchdog = threading.Timer(max(deadline - time.monotonic(), 0.0), _cut, args=(connection,))
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request("GET", target, headers=headers)
            response = connection.getresponse()
            if response.status in _REDIRECTS:
                location = response.getheader("Location")
                if not location:
                    raise FetchRefused(f"the server answered HTTP {response.status} without a Location")
                current = urljoin(current, location.strip())
                continue
            if response.status == 304:
                return Fetched(not_modified=True, body=b"", etag=etag, last_modified=last_modified)
            if response.status != 200:
                raise FetchRefused(f"the server answered HTTP {response.status}")
            body = _read(response, deadline)
            return Fetched(
                not_modified=False,
                body=body,
                etag=(response.getheader("ETag") or "")[:200],
                last_modified=(response.getheader("Last-Modified") or "")[:100],
            )
        except FetchRefused:
            raise
        except (OSError, http.client.HTTPException, ValueError) as exc:  # ValueError: a read after the cut
            if time.monotonic() >= deadline:
                raise FetchRefused(f"the calendar took more than {int(TOTAL_SECONDS)} seconds to download") from exc
            # Timeouts, refused connections, TLS failures, malformed answers: say which, not where.
            raise FetchRefused(f"the calendar could not be fetched ({_describe(exc)})") from exc
        finally:
            watchdog.cancel()
            connection.close()
    raise FetchRefused(f"the calendar URL redirected more than {MAX_REDIRECTS} times")


def _read(response: http.client.HTTPResponse, deadline: float) -> bytes:
    declared = response.getheader("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > MAX_BYTES:
        raise FetchRefused("the calendar is over 5 MB")
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise FetchRefused(f"the calendar took more than {int(TOTAL_SECONDS)} seconds to download")
        chunk = response.read1(CHUNK)  # what has arrived: the deadline is looked at between reads
        if not chunk:
            if time.monotonic() >= deadline:  # the watchdog ended it: what arrived is not the calendar
                raise FetchRefused(f"the calendar took more than {int(TOTAL_SECONDS)} seconds to download")
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BYTES:
            raise FetchRefused("the calendar is over 5 MB")
        chunks.append(chunk)


def _cut(connection: http.client.HTTPConnection) -> None:
    """The watchdog's act: end the connection's socket, so the read blocked on it returns."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out"
    if isinstance(exc, ssl.SSLError):
        return "TLS failed"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, http.client.HTTPException):
        return "the answer was not valid HTTP"
    return type(exc).__name__
