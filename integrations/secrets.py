"""Integration secrets encrypted at rest: AES-GCM, a fresh 96-bit nonce per record, versioned keys.

Keys come from ``BRAIN_SECRETS_KEYS`` (``"1:<base64 32 bytes>,2:<…>"``; the highest version
encrypts, every listed version decrypts) — in the embedded one-machine setup a key is
generated once into ``var/``. The secret's name is bound into each ciphertext as associated
data, so a ciphertext copied onto another name does not decrypt. Audit events name the
setting, never the value; nothing here logs a value.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.db import transaction

from brain.text.secrets import refused
from grants.audit import audit_record
from grants.models import Member
from grants.principals import Principal
from grants.services import require_administrator
from integrations.models import IntegrationSecret

NAME_MAX = 64


class SecretUnavailable(Exception):
    """The secret is not set, or cannot be decrypted with the configured keys."""


MAX_KEY_VERSION = 32767  # a PositiveSmallIntegerField beside each secret


def keys() -> dict[int, bytes]:
    """Configured key versions → 32-byte keys. Raises ``SecretUnavailable`` naming what is
    wrong when none is configured or an entry is not ``<version>:<base64 of 32 bytes>``."""
    found: dict[int, bytes] = {}
    for part in str(settings.BRAIN_SECRETS_KEYS or "").split(","):
        if not part.strip():
            continue
        version, _, encoded = part.strip().partition(":")
        try:
            number, key = int(version), base64.b64decode(encoded, validate=True)
        except (ValueError, binascii.Error):
            raise SecretUnavailable(
                "BRAIN_SECRETS_KEYS has an entry that is not <version>:<base64 key> (docs/operations.md)"
            ) from None
        if not (version.isascii() and version.isdigit() and 1 <= number <= MAX_KEY_VERSION):
            # Stored with each secret as a small positive number: -1 was a 500 at the first save.
            raise SecretUnavailable(f"a key version is a whole number from 1 to {MAX_KEY_VERSION}")
        if len(key) != 32:
            raise SecretUnavailable(f"key version {version} is not 32 bytes")
        found[number] = key
    if not found:
        raise SecretUnavailable("no secrets key is configured (BRAIN_SECRETS_KEYS)")
    return found


def storage_problem() -> str | None:
    """Why a secret cannot be stored now (the keys are missing or malformed), or None: forms
    ask before they accept a value, so an operator's missing key is a message, not a 500."""
    try:
        keys()
    except SecretUnavailable as exc:
        return f"Secrets cannot be stored: {exc}. The operator sets it (docs/operations.md)."
    return None


def validate_secret_name(name: str) -> None:
    """Raises ``ValueError`` unless ``name`` is letters, digits and underscores (1-64)."""
    if not name or len(name) > NAME_MAX or not name.replace("_", "").isalnum() or not name.isascii():
        raise ValueError("a secret's name is letters, digits and underscores (at most 64)")
    if refused(name):  # the value is encrypted; its name is stored, listed and audited in clear
        raise ValueError("a secret's name looks like a secret itself (a key or token): name the setting instead")


def _encrypt(name: str, value: str) -> tuple[bytes, bytes, int]:
    available = keys()
    version = max(available)
    nonce = os.urandom(12)
    return AESGCM(available[version]).encrypt(nonce, value.encode("utf-8"), name.encode()), nonce, version


def secret_set(*, actor: Principal, name: str, value: str) -> None:
    """Set or replace a secret (administrators). The audit event names the setting only."""
    require_administrator(actor)
    validate_secret_name(name)
    if not value:
        raise ValueError("the secret's value is empty")
    ciphertext, nonce, version = _encrypt(name, value)
    with transaction.atomic():
        IntegrationSecret.objects.update_or_create(
            name=name,
            defaults={
                "ciphertext": ciphertext,
                "nonce": nonce,
                "key_version": version,
                "updated_by": actor if isinstance(actor, Member) else None,
            },
        )
        audit_record(actor=actor, action="integration_secret.set", target_type="setting", target=name)


def secret_get(name: str) -> str:
    """The plaintext, for the integration that needs it (never for display). Raises ``SecretUnavailable``."""
    row = IntegrationSecret.objects.filter(name=name).first()
    if row is None:
        raise SecretUnavailable(f"the secret {name} is not set")
    key = keys().get(row.key_version)
    if key is None:
        raise SecretUnavailable(f"the key version {row.key_version} of {name} is not configured")
    try:
        return AESGCM(key).decrypt(bytes(row.nonce), bytes(row.ciphertext), name.encode()).decode("utf-8")
    except InvalidTag as exc:
        raise SecretUnavailable(f"the secret {name} does not decrypt") from exc


def secrets_rotate() -> int:
    """Re-encrypt every secret with the newest key (run after adding a key version); returns how many."""
    newest = max(keys())
    rotated = 0
    with transaction.atomic():
        for row in IntegrationSecret.objects.select_for_update().exclude(key_version=newest):
            ciphertext, nonce, version = _encrypt(row.name, secret_get(row.name))
            IntegrationSecret.objects.filter(pk=row.pk).update(ciphertext=ciphertext, nonce=nonce, key_version=version)
            rotated += 1
    return rotated
