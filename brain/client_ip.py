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
