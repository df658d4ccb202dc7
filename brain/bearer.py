"""Bearer tokens shown once: minted with a recognisable prefix, stored only as a digest.

Personal API tokens (``bmt_``) and question credentials (``bqc_``) are looked up by the
SHA-256 of the presented value; the row keeps the first characters so a person can tell
their tokens apart. (Build credentials are keyed HMACs instead: ``builds.services``.)
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

SHOWN_CHARS = 12


@dataclass(frozen=True)
class Minted:
    raw: str  # give to the person once; never stored
    digest: str  # store and look up by this
    shown: str  # store and display: enough to recognise, too little to use


def mint(prefix: str) -> Minted:
    """A new token ``prefix`` + 256 random bits (URL-safe)."""
    raw = prefix + secrets.token_urlsafe(32)
    return Minted(raw=raw, digest=digest(raw), shown=raw[:SHOWN_CHARS])


def digest(raw: str) -> str:
    """The stored form of a presented token."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()
