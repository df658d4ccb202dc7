"""Captures (sources): recording one under a server-suffixed key, its tags and its status; every field scanned."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Iterable

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from brain.text.paths import PathError, validate_category
from corpus.frontmatter import validate_source_id
from corpus.models import Source
from corpus.services import (
    MAX_TAG_LENGTH,
    MAX_TAGS,
    _holds,
    _refuse_secrets,
)
from grants.audit import audit_record
from grants.models import Member, Permission, Sensitivity
from grants.principals import Principal


def _normalise_tags(tags: Iterable[str]) -> list[str]:
    cleaned: list[str] = []
    for tag in tags:
        value = str(tag).strip().lower()
        if not value:
            continue
        if len(value) > MAX_TAG_LENGTH:
            raise ValidationError({"tags": f"a tag is at most {MAX_TAG_LENGTH} characters"})
        if value not in cleaned:
            cleaned.append(value)
    if len(cleaned) > MAX_TAGS:
        raise ValidationError({"tags": f"at most {MAX_TAGS} tags"})
    return cleaned


CAPTURE_KEY_SUFFIX_HEX = 6


def capture_key_assign(requested: str | None, *, actor: Principal | None, default_prefix: str = "notes") -> str:
    """The key a capture recorded by a client gets: what it asked for, plus a suffix the server chose.

    Capture keys are unique across the whole brain, tiers and other builds' drafts included.
    Were the requested key used as it is, "that key is taken" would tell a caller a capture
    exists that they cannot read; so every client-recorded capture gets ``-<6 hex>`` after
    its last segment (``calls/kickoff`` → ``calls/kickoff-3f9a1c``; no key: the day,
    ``uploads/2026-12-01-3f9a1c``), whether or not anything collides, and the caller cites
    the key it is given back. Grants by prefix are unaffected.
    Raises ``ValidationError`` naming the key's rule.
    """
    base = requested if requested else f"{default_prefix}/{timezone.now():%Y-%m-%d}"
    # Scanned as asked for: the suffix could hide a value that ends the key (a card number).
    _refuse_secrets(actor=actor, fields=[("key", base)], target=f"capture:{base}")
    try:
        validate_source_id(base)
    except ValueError as exc:
        raise ValidationError({"key": str(exc)}) from None
    if len(base) > 200 - CAPTURE_KEY_SUFFIX_HEX - 1:
        raise ValidationError({"key": f"a capture key is at most {200 - CAPTURE_KEY_SUFFIX_HEX - 1} characters here"})
    for _ in range(5):
        key = f"{base}-{secrets.token_hex(CAPTURE_KEY_SUFFIX_HEX // 2)}"
        if not Source.objects.filter(key=key).exists():
            return key
    raise ValidationError({"key": "could not assign a free key; try again"})


def source_create(
    *,
    actor: Principal,
    key: str,
    kind: str,
    title: str,
    text: str = "",
    uri: str = "",
    category: str | None = None,
    sensitivity: str = "ordinary",
    captured_at: dt.datetime | None = None,
    tags: Iterable[str] = (),
    draft: bool = False,
) -> Source:
    """Record a capture. ``actor`` needs ``suggest`` on ``captures/<key>`` (as it will be).

    Raises ``ValidationError`` (bad key, kind, category, tier, tags or a taken key),
    ``SecretRefused``/``NulRefused``, ``PermissionDenied``.
    """
    errors: dict[str, str] = {}
    try:
        validate_source_id(key)
    except ValueError as exc:
        errors["key"] = str(exc)
    if kind not in Source.Kind.values:
        errors["kind"] = f"kind must be one of {', '.join(Source.Kind.values)}"
    if category is not None:
        try:
            validate_category(category)
        except PathError as exc:
            errors["category"] = exc.message
    try:
        tier = int(Sensitivity.from_name(sensitivity))
    except ValueError:
        errors["sensitivity"] = "sensitivity must be one of ordinary, restricted, secret"
        tier = int(Sensitivity.ORDINARY)
    if not title.strip():
        errors["title"] = "title is required"
    # Every transport reaches this one write path (REST, MCP, a build's record_capture): a
    # value over its column was a database error (500), never a named refusal.
    for name, value in (("title", title.strip()), ("uri", uri)):
        limit = getattr(Source._meta.get_field(name), "max_length", None)
        if limit is not None and len(value) > limit:
            errors[name] = f"{name} is at most {limit:,} characters"
    if errors:
        raise ValidationError(errors)
    raw_tags = [str(tag) for tag in tags]
    clean_tags = _normalise_tags(raw_tags)
    # Tags are scanned as written: lower-casing would hide a token whose shape is its case.
    _refuse_secrets(
        actor=actor,
        fields=[
            ("key", key),
            ("title", title),
            ("text", text),
            ("uri", uri),
            ("category", category),
            *(("tag", tag) for tag in raw_tags),
        ],
        target=f"capture:{key}",
    )
    scope_path = f"captures/{key}"
    if not _holds(actor, Permission.SUGGEST, path=scope_path, category=category, sensitivity=tier):
        if tier > Sensitivity.ORDINARY and _holds(
            actor, Permission.SUGGEST, path=scope_path, category=category, sensitivity=int(Sensitivity.ORDINARY)
        ):
            # Their grant is there, for ordinary material: "no suggest permission" was untrue.
            label = Sensitivity(tier).label
            raise PermissionDenied(f"your grants on {scope_path} do not reach {label} captures (only ordinary ones)")
        # The folder, not the capture's own path: its last segment ends in a suffix the server
        # chose (``uploads/2026-12-07-3f9a1c``), a new one each try, that nobody could grant.
        folder = scope_path.rpartition("/")[0] + "/"
        raise PermissionDenied(
            f"you hold no suggest permission on {folder}, where this capture would go: ask an administrator for it"
        )
    with transaction.atomic():
        if Source.objects.filter(key=key).exists():
            raise ValidationError({"key": f"capture:{key} already exists"})
        source = Source.objects.create(
            key=key,
            scope_path=scope_path,
            kind=kind,
            title=title.strip(),
            text=text,
            uri=uri,
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            tags=clean_tags,
            category=category,
            sensitivity=tier,
            captured_at=captured_at or timezone.now(),
            created_by=actor if isinstance(actor, Member) else None,
            is_live=not draft,
        )
        audit_record(actor=actor, action="source.create", target_type="source", target=key, metadata={"draft": draft})
    return source


def source_tag(*, actor: Principal, key: str, add: Iterable[str] = (), remove: Iterable[str] = ()) -> Source:
    """Add and remove tags on a capture. Needs ``suggest`` on it.

    A capture the actor cannot reach raises ``Source.DoesNotExist`` — exactly as a
    missing one — even if the actor could read it (read alone does not allow tagging,
    and that is reported as ``PermissionDenied``).
    """
    raw_added = [str(tag) for tag in add]
    _refuse_secrets(actor=actor, fields=[("tag", tag) for tag in raw_added], target=f"capture:{key}")
    added = _normalise_tags(raw_added)
    removed = set(_normalise_tags(remove))
    with transaction.atomic():
        if not Source.objects.visible_to(actor, "read").filter(key=key).exists():
            raise Source.DoesNotExist(f"capture:{key} not found")
        try:
            source = Source.objects.visible_to(actor, "suggest").select_for_update().get(key=key)
        except Source.DoesNotExist:
            raise PermissionDenied(f"you hold no suggest permission on capture:{key}") from None
        tags = [tag for tag in source.tags if tag not in removed]
        tags += [tag for tag in added if tag not in tags]
        if len(tags) > MAX_TAGS:
            raise ValidationError({"tags": f"at most {MAX_TAGS} tags"})
        if tags != source.tags:
            source.tags = tags
            source.save(update_fields=["tags", "updated_at"])
            audit_record(
                actor=actor,
                action="source.tag",
                target_type="source",
                target=key,
                metadata={"added": len(added), "removed": len(removed)},
            )
    return source
