"""Weekly insights: a deterministic summary of one layer's week.

A member who opted in (``MemoryPreference.weekly_insights``) gets one for their personal
layer; when an administrator turned on ``TeamMemorySettings.shared_insights`` the shared
layer gets one, shown to every member. A personal insight reads only its member's personal
layer, so it can never carry another member's personal memories.

What a week holds: new and changed memories, near-duplicates flagged, contradictions and
supersessions, the most recalled, volatile memories nobody touched for 30 days, and capsule
problems. Every query is bounded by an index on the layer and a time range (or by the
capsule rows' partial index) and by a row limit: the cost follows the week's activity, not
the table's size (``make bench-memory`` measures it at 5k and 50k memories).

Delivery (email through Django's mail backend, or a Slack DM) happens after the insight is
committed, under the insight's lease; a failed delivery, or one whose run died before it
sent, is retried by the next runs for two days.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from brain.leases import lease_claim_unfinished, lease_expired, lease_finish
from grants.models import Member
from memory import capsules
from memory.models import (
    InsightDelivery,
    LinkType,
    Memory,
    MemoryEvent,
    MemoryInsight,
    MemoryLink,
    MemoryPreference,
    Status,
    TeamMemorySettings,
    Volatility,
    Workspace,
)
from memory.services import DUPLICATE_TAG

logger = logging.getLogger(__name__)

LISTED = 5  # memories named per section
COUNT_CAP = 500  # counts stop here ("500+"): a count must not become a scan
STALE_AFTER = dt.timedelta(days=30)
RETRY_DELIVERY_FOR = dt.timedelta(days=2)
# How long one run holds an insight it is sending (a mail server's or Slack's timeout is
# far shorter); a run killed meanwhile is taken over this long after.
DELIVERY_HOLD = dt.timedelta(minutes=10)
MEMBERS_PER_RUN = 200


@dataclass(frozen=True)
class Week:
    """Monday 00:00 to the next Monday 00:00 in the brain's time zone."""

    start: dt.datetime
    end: dt.datetime

    @property
    def label(self) -> str:
        return f"{self.start:%d %b} – {(self.end - dt.timedelta(days=1)):%d %b %Y}"


def last_full_week(now: dt.datetime | None = None) -> Week:
    """The most recent complete week before ``now``."""
    zone = ZoneInfo(settings.TIME_ZONE)
    local = (now or timezone.now()).astimezone(zone)
    this_monday = dt.datetime.combine(local.date() - dt.timedelta(days=local.weekday()), dt.time(), tzinfo=zone)
    return Week(start=this_monday - dt.timedelta(days=7), end=this_monday)


def _layer(member: Member | None) -> QuerySet[Memory]:
    if member is None:
        return Memory.objects.filter(workspace=Workspace.COMPANY)
    return Memory.objects.filter(workspace=Workspace.PERSONAL, author=member)


def _capped_count(queryset: QuerySet[Any]) -> int:
    return len(queryset.values_list("pk", flat=True)[: COUNT_CAP + 1])


def _listed(queryset: QuerySet[Memory]) -> list[dict[str, Any]]:
    return [
        {"id": str(memory.pk), "text": _excerpt(memory.content), "recalled": memory.recall_count}
        for memory in queryset.only("id", "content", "recall_count")[:LISTED]
    ]


def _excerpt(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _capsule_problems(member: Member | None, layer: QuerySet[Memory]) -> list[dict[str, Any]]:
    """Each capsule of the layer that would not be served complete, and why."""
    targets: set[tuple[str, str | None]] = set()
    for tags in layer.filter(is_capsule=True, status=Status.CANONICAL).values_list("tags", flat=True)[:1000]:
        for tag in tags:
            if tag == "capsule:core":
                targets.add(("core", None))
            elif tag.startswith("capsule:project:"):
                targets.add(("project", tag.removeprefix("capsule:project:")))
    owner = member or Member(pk=0)
    workspace = Workspace.COMPANY if member is None else Workspace.PERSONAL
    problems = []
    for kind, project in sorted(targets, key=lambda target: (target[0], target[1] or "")):
        name = "core" if kind == "core" else f"project {project}"
        if kind == "project" and not capsules.PROJECT_ID.fullmatch(project or ""):
            problems.append({"capsule": name, "problem": "the project id is not valid"})
            continue
        try:
            payload = capsules.build(owner, kind, project, workspace).payload
        except capsules.CapsuleRefused as refused:
            problems.append({"capsule": name, "problem": refused.reason})
            continue
        if payload["duplicate_slots"]:
            problems.append({"capsule": name, "problem": "two entries for " + ", ".join(payload["duplicate_slots"])})
        if payload["invalid_entries"]:
            problems.append({"capsule": name, "problem": f"{len(payload['invalid_entries'])} malformed entries"})
        if payload["omitted_slots"]:
            problems.append({"capsule": name, "problem": "over budget: " + ", ".join(payload["omitted_slots"])})
        if payload["crowded"]:
            problems.append({"capsule": name, "problem": "too-many-candidates: only administrators' entries are read"})
    return problems


def summarise(member: Member | None, week: Week) -> dict[str, Any]:
    """The week's record of one layer (``member`` None: the shared layer): counts and named memories."""
    layer = _layer(member)
    live = layer.exclude(status=Status.DEPRECATED)
    in_week = Q(created_at__gte=week.start, created_at__lt=week.end)
    new = live.filter(in_week)
    changed = live.filter(updated_at__gte=week.start, updated_at__lt=week.end, created_at__lt=week.start)
    flagged = new.filter(tags__contains=[DUPLICATE_TAG])
    superseded = MemoryLink.objects.filter(
        type=LinkType.SUPERSEDES, created_at__gte=week.start, created_at__lt=week.end
    ).filter(from_memory__in=layer)
    demoted = MemoryEvent.objects.filter(
        workspace=Workspace.COMPANY if member is None else Workspace.PERSONAL,
        action=MemoryEvent.Action.STATUS_CHANGED,
        created_at__gte=week.start,
        created_at__lt=week.end,
        metadata__reason="contradicts protected",
    )
    if member is not None:
        demoted = demoted.filter(actor=member)
    recalled = live.filter(last_recalled_at__gte=week.start, last_recalled_at__lt=week.end)
    stale = live.filter(volatility=Volatility.VOLATILE, updated_at__lt=week.end - STALE_AFTER)
    return {
        "layer": "company" if member is None else "personal",
        "week_start": week.start.date().isoformat(),
        "week_end": week.end.date().isoformat(),
        "new": {"count": _capped_count(new), "top": _listed(new.order_by("-importance", "-created_at"))},
        "changed": {"count": _capped_count(changed), "top": _listed(changed.order_by("-updated_at"))},
        "duplicates_flagged": {"count": _capped_count(flagged), "top": _listed(flagged.order_by("-created_at"))},
        "supersessions": [
            {"new": str(link.from_memory_id), "old": str(link.to_memory_id), "text": _excerpt(link.from_memory.content)}
            for link in superseded.select_related("from_memory").order_by("-created_at")[:LISTED]
        ],
        "contradictions_held": _capped_count(demoted),
        "most_recalled": _listed(recalled.order_by("-recall_count", "-last_recalled_at")),
        "stale_volatile": {"count": _capped_count(stale), "top": _listed(stale.order_by("updated_at"))},
        "capsule_problems": _capsule_problems(member, layer),
    }


def _count(value: int) -> str:
    return f"{COUNT_CAP}+" if value > COUNT_CAP else str(value)


def render(summary: dict[str, Any], week: Week) -> str:
    """The summary as plain text (Markdown-friendly), the same for the dashboard, mail and Slack."""
    whose = "the shared team layer" if summary["layer"] == "company" else "your personal memories"
    lines = [f"Your week in {whose}, {week.label}"]

    def section(title: str, block: dict[str, Any]) -> None:
        if block["count"]:
            lines.append(f"\n{title}: {_count(block['count'])}")
            lines.extend(f"- {item['text']}" for item in block["top"])

    section("New", summary["new"])
    section("Changed", summary["changed"])
    section("Flagged as near-duplicates (keep both, or merge them)", summary["duplicates_flagged"])
    if summary["supersessions"]:
        lines.append(f"\nSuperseded by a newer memory: {len(summary['supersessions'])}")
        lines.extend(f"- {item['text']}" for item in summary["supersessions"])
    if summary["contradictions_held"]:
        lines.append(
            f"\nNew memories that contradicted a canonical one and were kept as drafts: "
            f"{_count(summary['contradictions_held'])}"
        )
    if summary["most_recalled"]:
        lines.append("\nMost recalled")
        lines.extend(f"- {item['text']} (recalled {item['recalled']}×)" for item in summary["most_recalled"])
    section("Volatile memories untouched for 30 days (still true?)", summary["stale_volatile"])
    if summary["capsule_problems"]:
        lines.append("\nPrompt capsules that are not complete")
        lines.extend(f"- {item['capsule']}: {item['problem']}" for item in summary["capsule_problems"])
    if len(lines) == 1:
        lines.append("\nA quiet week: nothing new, changed or flagged.")
    return "\n".join(lines)


def _wants_delivery(member: Member | None) -> bool:
    """Whether ``member`` chose to have insights sent (mail or Slack), not only shown."""
    if member is None:
        return False
    preference = MemoryPreference.objects.filter(member=member).first()
    return preference is not None and preference.insights_delivery != InsightDelivery.DASHBOARD


def insight_write(member: Member | None, week: Week) -> MemoryInsight | None:
    """Write the week's insight of one layer once; None when it already exists. The row
    records whether it is to be sent, so sending survives the run that wrote it."""
    written = MemoryInsight.objects.filter(week_start=week.start.date())
    if (written.filter(member=member) if member else written.filter(member__isnull=True)).exists():
        return None
    for _attempt in range(3):
        summary = summarise(member, week)
        try:
            with transaction.atomic():
                if not _quoted_still_in_layer(member, summary):
                    continue  # one was forgotten or moved while the summary was read: read again
                return MemoryInsight.objects.create(
                    member=member,
                    week_start=week.start.date(),
                    summary=summary,
                    text=render(summary, week),
                    delivers=_wants_delivery(member),
                )
        except IntegrityError:
            return None  # another run wrote it first
    logger.warning("insight of week %s not written: its memories kept moving; the next run writes it", week.start)
    return None


_MEMORY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _quoted_still_in_layer(member: Member | None, summary: dict[str, Any]) -> bool:
    """Whether every memory ``summary`` quotes is still in its layer, each then held until the
    insight commits. A memory un-shared (or forgotten) after the summary read it was quoted
    to every member: its move found no insight to drop, the insight not being written yet.
    Now a move waits for the insight, and then drops it as it drops any that quotes it."""
    quoted = sorted(set(_MEMORY_ID.findall(json.dumps(summary))))
    if not quoted:
        return True
    held = _layer(member).filter(pk__in=quoted).order_by("pk").select_for_update().values_list("pk", flat=True)
    return {str(pk) for pk in held} == set(quoted)


def _send(insight: MemoryInsight, delivery: str) -> None:
    """Send the insight (plus the week's shared one) by ``delivery``; raises when it cannot."""
    if insight.member is None:
        raise ValueError("the shared insight is shown, never sent")
    text = insight.text
    shared = MemoryInsight.objects.filter(member__isnull=True, week_start=insight.week_start).first()
    if shared is not None:
        text += "\n\n" + shared.text
    if delivery == InsightDelivery.EMAIL:
        if not insight.member.user.email:
            raise ValueError("the member has no email address")
        send_mail(
            subject=f"Your Brain week, {insight.week_start:%d %b %Y}",
            message=text + f"\n\n{settings.BRAIN_BASE_URL}/memory/",
            from_email=None,
            recipient_list=[insight.member.user.email],
        )
    else:
        from integrations.slack_dm import send_direct_message

        send_direct_message(insight.member, text)


def deliver(insight: MemoryInsight) -> bool:
    """Send a personal insight the way its member chose, under the row's lease.

    True when it was sent; False when it is not to be sent (the member reads it on the
    dashboard only, now or since it was written), another run holds it, or the delivery
    failed (the error is recorded on the insight and the next run retries). A run killed
    while sending leaves the lease to expire (``DELIVERY_HOLD``); a later run takes it over.
    """
    if insight.member is None or not insight.delivers:
        return False
    lease = lease_claim_unfinished(
        MemoryInsight, insight.pk, unfinished=Q(delivers=True, delivered_at__isnull=True), duration=DELIVERY_HOLD
    )
    if lease is None:
        return False
    preference = MemoryPreference.objects.filter(member=insight.member).first()
    if preference is None or preference.insights_delivery == InsightDelivery.DASHBOARD:
        lease_finish(lease, delivers=False, delivery_error="")
        return False
    error = ""
    try:
        _send(insight, preference.insights_delivery)
    except Exception as exc:  # a mail server or Slack down: recorded, retried by the next run
        error = f"{type(exc).__name__}: {exc}"[:300]
        logger.warning("insight %s not delivered: %s", insight.pk, error)
    lease_finish(lease, delivered_at=None if error else timezone.now(), delivery_error=error)
    return not error


def insights_run(now: dt.datetime | None = None) -> dict[str, int]:
    """The beat job: write last week's insights that are due, deliver, and retry deliveries
    that failed or whose run died before sending.

    Idempotent (one insight per layer and week, one send per insight); at most
    ``MEMBERS_PER_RUN`` members a run, the rest on the next.
    """
    week = last_full_week(now)
    written = delivered = 0
    team = TeamMemorySettings.objects.filter(pk=1).first()
    if team is not None and team.shared_insights and insight_write(None, week) is not None:
        written += 1
    done = MemoryInsight.objects.filter(week_start=week.start.date(), member__isnull=False).values("member_id")
    due = (
        Member.objects.filter(is_active=True, memory_preference__weekly_insights=True)
        .exclude(pk__in=done)
        .order_by("pk")[:MEMBERS_PER_RUN]
    )
    for member in due:
        insight = insight_write(member, week)
        if insight is not None:
            written += 1
            delivered += deliver(insight)
    # Only to members still here: a digest (with the shared layer in it) does not follow
    # someone suspended or gone between a failed delivery and its retry.
    retry = MemoryInsight.objects.filter(
        lease_expired() | Q(lease_token__isnull=True),
        member__is_active=True,
        member__user__is_active=True,
        member__offboarded_at__isnull=True,
        member__isnull=False,
        delivers=True,
        delivered_at__isnull=True,
        created_at__gte=timezone.now() - RETRY_DELIVERY_FOR,
    )
    for insight in retry.select_related("member__user").order_by("created_at")[:MEMBERS_PER_RUN]:
        delivered += deliver(insight)
    return {"written": written, "delivered": delivered}


def latest_for(member: Member) -> list[MemoryInsight]:
    """What the dashboard shows: the member's latest insight and the shared layer's, newest first."""
    shown: list[MemoryInsight] = []
    mine = MemoryInsight.objects.filter(member=member).first()
    if mine is not None:
        shown.append(mine)
    team = TeamMemorySettings.objects.filter(pk=1, shared_insights=True).exists()
    shared = MemoryInsight.objects.filter(member__isnull=True).first() if team else None
    if shared is not None:
        shown.append(shared)
    return shown
