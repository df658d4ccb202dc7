"""The client's network address, for per-address limits (sign-in throttling, registration)."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """The address of whoever sent ``request``.

    With ``BRAIN_TRUSTED_PROXY_COUNT`` = 0 (the default) that is the socket's peer. Behind N
    reverse proxies it is the N-th entry from the right of ``X-Forwarded-For``: each proxy
    appends the address it received the request from, so the last N entries were written by
    proxies we trust and everything further left is the client's own claim, never read. A
    header with fewer entries, or an entry that is not an address, falls back to the peer.
    """
    peer = str(request.META.get("REMOTE_ADDR") or "")
    trusted = int(settings.BRAIN_TRUSTED_PROXY_COUNT)
    if trusted == 0:
        return peer
    forwarded = [entry.strip() for entry in str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",")]
    forwarded = [entry for entry in forwarded if entry]
    if len(forwarded) < trusted:
        return peer
    try:
        return str(ipaddress.ip_address(forwarded[-trusted]))
    except ValueError:
        return peer


def client_network(request: HttpRequest) -> str:
    """``client_ip``, with an IPv6 address widened to its /64 (named by its first address) —
    what per-address limits count.

    One IPv6 subscriber holds a whole /64 (2^64 addresses): counted per address, sign-in
    failures rotated through it never paused anyone. IPv4 addresses are kept as they are.
    """
    address = client_ip(request)
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:  # ::ffff:192.0.2.1 is that IPv4 address
            return str(parsed.ipv4_mapped)
        # The /64's first address, not "…/64": axes keeps it in an IP-address column.
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False).network_address)
    return str(parsed)
