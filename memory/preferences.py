"""Capture defaults and insight choices: a member's own, and the team's (administrators only).

The one write path for ``MemoryPreference`` and ``TeamMemorySettings``. What a capture then
uses is resolved by ``memory.services.capture_defaults``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction

from brain.text.secrets import NulRefused, SecretRefused
from grants.audit import audit_record
from grants.models import Member
from grants.principals import SYSTEM, Principal
from memory.classify import MemoryInvalid, normalise_tags
from memory.models import InsightDelivery, MemoryPreference, TeamMemorySettings, Workspace

MAX_DEFAULT_TAGS = 16


def _layer(value: Any) -> str:
    """A layer name, or "" for "no default of my own"."""
    if value in (None, ""):
        return ""
    if value not in Workspace.values:
        raise MemoryInvalid('default layer must be "personal", "company" or empty')
    return str(value)


def _tags(value: Any) -> list[str]:
    """Default tags from a list or a comma/space separated string; no ``status:`` tags."""
    if isinstance(value, str):
        value = [part for part in value.replace(",", " ").split() if part]
    parsed = normalise_tags(value if value is not None else [], "")
    if parsed.status:
        raise MemoryInvalid("a default tag cannot set a status (status:…)")
    if len(parsed.tags) > MAX_DEFAULT_TAGS:
        raise MemoryInvalid(f"at most {MAX_DEFAULT_TAGS} default tags")
    return parsed.tags


def team_settings_problems(*, default_workspace: Any, default_tags: Any) -> dict[str, str]:
    """What ``team_memory_settings_save`` would refuse in these values (field → reason), so a
    form can show it beside the field instead of losing what was typed."""
    problems: dict[str, str] = {}
    for field, parse, value in (
        ("default_workspace", _layer, default_workspace),
        ("default_tags", _tags, default_tags),
    ):
        try:
            parse(value)
        except (MemoryInvalid, SecretRefused, NulRefused) as error:
            # A refused secret is named, never echoed (its message says what kind, not the value).
            problems[field] = str(error)
    return problems


def preferences_of(member: Member) -> MemoryPreference:
    """The member's preference row, unsaved with defaults when they never chose anything."""
    return MemoryPreference.objects.filter(member=member).first() or MemoryPreference(member=member)


def team_settings() -> TeamMemorySettings:
    """The team's row, unsaved with defaults when no administrator changed it yet."""
    return TeamMemorySettings.objects.filter(pk=1).first() or TeamMemorySettings(pk=1)


def memory_preferences_save(
    *,
    actor: Member,
    default_workspace: Any,
    default_tags: Any,
    weekly_insights: bool,
    insights_delivery: Any,
) -> MemoryPreference:
    """Replace the member's own capture defaults and insight choices (all fields at once)."""
    if not actor.is_active:
        raise PermissionDenied("only an active member has memory settings")
    if insights_delivery not in InsightDelivery.values:
        raise MemoryInvalid('delivery must be "dashboard", "email" or "slack"')
    if insights_delivery == InsightDelivery.EMAIL and not actor.user.email:
        raise MemoryInvalid("delivery by email needs an email address on your account")
    if insights_delivery == InsightDelivery.SLACK and not actor.slack_user_id:
        raise MemoryInvalid("delivery by Slack needs your Slack account linked (run /brain link in Slack)")
    layer, tags = _layer(default_workspace), _tags(default_tags)
    with transaction.atomic():
        preference, _created = MemoryPreference.objects.select_for_update().get_or_create(member=actor)
        preference.default_workspace = layer
        preference.default_tags = tags
        preference.weekly_insights = bool(weekly_insights)
        preference.insights_delivery = insights_delivery
        preference.save()
        return preference


def team_memory_settings_save(
    *, actor: Principal, default_workspace: Any, default_tags: Any, shared_insights: bool
) -> TeamMemorySettings:
    """Replace the team's capture defaults and the shared layer's weekly insight.

    Administrators only (and the system, for a superuser without a member row in the admin).
    """
    if not (actor is SYSTEM or (isinstance(actor, Member) and actor.is_administrator)):
        raise PermissionDenied("only an administrator changes the team's memory settings")
    layer, tags = _layer(default_workspace), _tags(default_tags)
    with transaction.atomic():
        row, _created = TeamMemorySettings.objects.select_for_update().get_or_create(pk=1)
        before = {"layer": row.default_workspace, "tags": len(row.default_tags), "insights": row.shared_insights}
        row.default_workspace = layer
        row.default_tags = tags
        row.shared_insights = bool(shared_insights)
        row.save()
        audit_record(
            actor=actor,
            action="memory.team_settings",
            target_type="memory_settings",
            target="team",
            metadata={"before": before, "after": {"layer": layer, "tags": len(tags), "insights": row.shared_insights}},
        )
        return row
