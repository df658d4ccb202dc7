"""Calendar capture: an ICS file imported once, or an ICS URL a member subscribes to.

Each VEVENT becomes one episodic memory through ``memory_capture_from`` (so the scanner,
capture defaults, duplicate check and links all apply), keyed by its origin
``ics:<UID>`` — ``ics:<UID>:<RECURRENCE-ID>`` for a changed occurrence of a recurring
event — and dated by its start (``occurred_at``; an all-day event starts at midnight in
``settings.TIME_ZONE``, a floating time is read in it too). Re-importing an unchanged event
is ``unchanged``; a changed one (new summary, time, place…) is ``updated`` in place.

What is not imported, each counted with its reason in ``CalendarResult.skipped``:
cancelled events (``STATUS:CANCELLED``; a copy imported earlier is left as it was), events
without a UID or a readable DTSTART, a property this import reads that could not be
parsed, a UID+RECURRENCE-ID repeated within one file, and events the capture pipeline
refuses (a secret in the text, NUL…). A recurring event is imported once, as its master
event with the rule in words ("Repeats weekly on Tuesday"); occurrences are never expanded.

Transactions: each event is captured in its own transaction (a savepoint), so a failure
inside one event never leaves it half-written, but an import is **not** all-or-nothing:
events before a refused one stay stored and the result reports each skipped event. That is
deliberate for calendars — one odd event in a 1,000-event export must not block the rest,
and re-running the import is idempotent. A file that is not iCalendar at all, over 5 MB or
over 2,000 events is refused whole (``MemoryInvalid``) before anything is stored.

Subscriptions (``CalendarSubscription``) are refreshed by ``calendar_refresh_due`` on a
beat (``memory.calendars_refresh``) through ``memory.calendar_fetch`` (public addresses
only, conditional GET, 5 MB). A refresh never raises: its error goes to ``last_error``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone
from icalendar import Calendar, Event
from icalendar.cal.component import Component

from brain.jobs import enqueue_on_commit
from brain.text.secrets import NulRefused, SecretRefused, mask, refuse, unstorable
from grants.models import Member
from memory.calendar_fetch import check_subscription_url, fetch_calendar
from memory.classify import MemoryInvalid
from memory.models import CalendarSubscription, Kind, Memory
from memory.services import memory_capture_from, workspace_value

logger = logging.getLogger(__name__)

MAX_BYTES = 5 * 1024 * 1024
MAX_EVENTS = 2_000
# A first import costs ~50-130 ms an event (the whole capture pipeline), so one web request
# takes at most this many; a bigger calendar is subscribed to (refreshed in the background).
MAX_EVENTS_PER_REQUEST = 400
MAX_SUBSCRIPTIONS = 20
MAX_DESCRIPTION = 4_000
MAX_FIELD = 300
MAX_PEOPLE = 20
SOURCE = "calendar"
TAG = "calendar"

# Properties this import reads: one of them broken makes the event unreadable; others are ignored.
_READ = ("UID", "DTSTART", "DTEND", "DURATION", "RECURRENCE-ID", "RRULE", "STATUS", "SUMMARY", "LOCATION",
         "DESCRIPTION", "ORGANIZER", "ATTENDEE")  # fmt: skip
_BEGIN_EVENT = re.compile(rb"^BEGIN:VEVENT\s*$", re.IGNORECASE | re.MULTILINE)
_INCOMPLETE = "the file holds no complete BEGIN:VCALENDAR … END:VCALENDAR"
# Lines that only draw a rule (Outlook and Teams invitations are full of them).
_RULE_LINE = re.compile(r"^[\s_\-=~*.]{4,}$")


@dataclass(frozen=True)
class Skipped:
    """One event that was not captured: which (its number in the file and summary) and why."""

    event: str
    reason: str


@dataclass
class CalendarResult:
    """What one import or refresh did, counted per capture outcome.

    ``stored`` includes near-duplicates stored with a flag; ``duplicate`` counts events
    whose text matched an existing memory so closely that nothing was stored.
    ``not_modified`` is a refresh the server answered 304; ``error`` a refresh that failed.
    """

    source: str
    events: int = 0
    stored: int = 0
    updated: int = 0
    unchanged: int = 0
    duplicate: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    not_modified: bool = False
    error: str = ""

    def as_dict(self, *, skipped_limit: int | None = None) -> dict[str, Any]:
        """The JSON shape (``skipped`` as objects, at most ``skipped_limit`` of them)."""
        shown = self.skipped if skipped_limit is None else self.skipped[:skipped_limit]
        return {
            "source": self.source, "events": self.events, "stored": self.stored, "updated": self.updated,
            "unchanged": self.unchanged, "duplicate": self.duplicate, "skipped_count": len(self.skipped),
            "skipped": [{"event": item.event, "reason": item.reason} for item in shown],
            "not_modified": self.not_modified, "error": self.error,
        }  # fmt: skip

    def summary(self) -> str:
        """One line for a person: the counts that are not zero."""
        if self.error:
            return f"Failed: {self.error}"
        if self.not_modified:
            return "Not changed since the last refresh."
        parts = [
            f"{count} {label}"
            for count, label in (
                (self.stored, "stored"), (self.updated, "updated"), (self.unchanged, "unchanged"),
                (self.duplicate, "already remembered"), (len(self.skipped), "skipped"),
            )
            if count
        ]  # fmt: skip
        return f"{self.events} event(s): " + (", ".join(parts) if parts else "nothing to import") + "."


# --------------------------------------------------------------------------- parsing


# A file's own time zone definitions are never handed to icalendar: it caches them by TZID for
# the whole process (the first file's "Customized Time Zone" then shifted every other member's
# events named so), and expands their rules second by second from the zone's start (a 417-byte
# zone of FREQ=SECONDLY took minutes and hundreds of MB). Known zone names resolve through the
# zone database as before; a name only this file defines is read at its standard offset.
# Read line by line: the patterns these replaced ("^BEGIN:VTIMEZONE$.*?^END:VTIMEZONE$" and a
# lazy scan from each BEGIN:STANDARD) searched to the end of the text from every opening that
# never closed — quadratic (16,000 of them, 272 KB, took 48 s of a request or a worker).
_TZID_LINE = re.compile(r"TZID[^:\r\n]*:(.*)", re.IGNORECASE)
_OFFSET_TO = re.compile(r"TZOFFSETTO[^:\r\n]*:[ \t]*([+-])(\d{2})(\d{2})", re.IGNORECASE)


def _own_zones(text: str) -> tuple[str, dict[str, dt.timezone]]:
    """``text`` without its VTIMEZONE blocks, and each block's TZID → its standard offset.

    A block runs from a ``BEGIN:VTIMEZONE`` line to the next ``END:VTIMEZONE`` line; one that
    never closes is left in the text, as written.
    """
    offsets: dict[str, dt.timezone] = {}
    kept: list[str] = []
    block: list[str] | None = None
    for line in text.splitlines(keepends=True):
        marker = line.rstrip("\r\n").upper()
        if block is None:
            if marker == "BEGIN:VTIMEZONE":
                block = [line]
            else:
                kept.append(line)
            continue
        block.append(line)
        if marker == "END:VTIMEZONE":
            _zone_offset(block, offsets)
            block = None
    if block is not None:
        kept.extend(block)
    return "".join(kept), offsets


def _zone_offset(block: list[str], offsets: dict[str, dt.timezone]) -> None:
    """Record a VTIMEZONE block's TZID at its (first) standard offset, when it names both."""
    name: str | None = None
    offset: re.Match[str] | None = None
    in_standard = False
    for line in block:
        bare = line.rstrip("\r\n")
        if name is None and (named := _TZID_LINE.match(bare)):
            name = named.group(1).strip().strip("/")
        if bare.upper() == "BEGIN:STANDARD":
            in_standard = True
        elif in_standard and offset is None:
            offset = _OFFSET_TO.match(bare)
    if name and offset and int(offset.group(2)) < 24 and int(offset.group(3)) < 60:
        sign = -1 if offset.group(1) == "-" else 1
        minutes = sign * (int(offset.group(2)) * 60 + int(offset.group(3)))
        offsets[name] = dt.timezone(dt.timedelta(minutes=minutes))


# What icalendar is handed at most: it builds an object for every line and every value of a
# list (a 5 MB RRULE of 2.5 million BYMONTHDAY values cost 21 s and ~1 GB; 700,000 lines of
# "X-A:b" 32 s), all within the 5 MB limit.
MAX_LINES = 100_000
MAX_LINE = 256 * 1024  # an unfolded property; no field this import keeps is near it
MAX_RULE_LINE = 16 * 1024  # RRULE, EXRULE, RDATE, EXDATE: lists icalendar expands value by value
_RULES = ("RRULE", "EXRULE", "RDATE", "EXDATE")


def _check_shape(text: str) -> None:
    """``MemoryInvalid`` when the file has more lines, or a longer property, than icalendar may be handed."""
    lines = text.count("\n") + 1
    if lines > MAX_LINES:
        raise MemoryInvalid(f"the calendar has {lines:,} lines; one file may have {MAX_LINES:,} (split it)")
    name, length = "", 0
    for line in text.splitlines():
        if line[:1] in (" ", "\t"):  # a folded line continues the property above it
            length += len(line) - 1
        else:
            name, length = line.split(":", 1)[0].split(";", 1)[0].upper(), len(line)
        limit = MAX_RULE_LINE if name in _RULES else MAX_LINE
        if length > limit:
            raise MemoryInvalid(f"a {name or 'property'} line is longer than {limit:,} characters")


def _in_own_zone(event: Event, name: str, value: object, zones: dict[str, dt.timezone]) -> object:
    """A floating time whose TZID only this file defined, at that zone's standard offset."""
    if not isinstance(value, dt.datetime) or value.tzinfo is not None:
        return value
    tzid = getattr(event.get(name), "params", {}).get("TZID")
    zone = zones.get(str(tzid).strip().strip("/")) if tzid else None
    return value.replace(tzinfo=zone) if zone is not None else value


def _parse(data: bytes, max_events: int = MAX_EVENTS) -> tuple[list[Event], dict[str, dt.timezone]]:
    """The VEVENTs of ``data``, or ``MemoryInvalid`` naming why the file is not readable.

    icalendar's own messages quote the offending input, which may be anything (a secret
    included), so they are replaced by ours.
    """
    if not isinstance(data, bytes | bytearray):
        raise MemoryInvalid("the calendar must be bytes")
    if len(data) > MAX_BYTES:
        raise MemoryInvalid("the calendar is over 5 MB")
    # Counted on the bytes first, so a huge file is refused before it is parsed.
    if len(_BEGIN_EVENT.findall(data)) > max_events:
        raise MemoryInvalid(_too_many(max_events))
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MemoryInvalid(f"the calendar is not UTF-8 text (byte {exc.start} is not)") from None
    if not text.strip():
        raise MemoryInvalid("the calendar is empty")
    text, zones = _own_zones(text)
    _check_shape(text)
    try:
        calendars = Calendar.from_ical(text, multiple=True)
    except ValueError as exc:
        message = str(exc)
        if message.startswith("Content line could not be parsed"):
            raise MemoryInvalid("the file is not iCalendar: a line is not a NAME:value property") from None
        if message.startswith("Found no components"):
            raise MemoryInvalid(_INCOMPLETE) from None
        if "does not have a parent component" in message:
            raise MemoryInvalid("the file must start with BEGIN:VCALENDAR (a property stands outside it)") from None
        raise MemoryInvalid("the calendar could not be parsed as iCalendar") from None
    assert isinstance(calendars, list)
    if not calendars:  # an unterminated BEGIN:VCALENDAR parses as nothing
        raise MemoryInvalid(_INCOMPLETE)
    if any(calendar.name != "VCALENDAR" for calendar in calendars):
        raise MemoryInvalid("the file must be a VCALENDAR (it starts with something else)")
    events = [event for calendar in calendars for event in calendar.walk("VEVENT") if isinstance(event, Event)]
    if len(events) > max_events:
        raise MemoryInvalid(_too_many(max_events))
    return events, zones


def _too_many(limit: int) -> str:
    if limit < MAX_EVENTS:
        return (f"the calendar holds more than {limit} events, more than one upload takes;"
                " subscribe to its URL instead (imported in the background) or split the file")  # fmt: skip
    return f"the calendar holds more than {limit} events; split it"


def _text(event: Component, name: str, limit: int = MAX_FIELD) -> str:
    value = event.get(name)
    if value is None or isinstance(value, list):
        return ""
    clean = " ".join(str(value).split())
    return clean if len(clean) <= limit else clean[: limit - 1].rstrip() + "…"


def _when_key(value: dt.date) -> str:
    """A RECURRENCE-ID as a stable key: UTC for a zoned time, as written for floating or a date."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        return value.strftime("%Y%m%dT%H%M%S")
    return value.strftime("%Y%m%d")


def _origin(uid: str, recurrence: dt.date | None) -> str:
    # The origin column holds 300 characters; a longer UID is keyed by its hash.
    key = uid if len(uid) <= 200 else "sha256:" + hashlib.sha256(uid.encode()).hexdigest()
    return f"ics:{key}" + (f":{_when_key(recurrence)}" if recurrence is not None else "")


def _aware(value: dt.date) -> dt.datetime:
    """A start as an aware datetime: a DATE is midnight, a floating time local, in TIME_ZONE."""
    zone = timezone.get_default_timezone()
    if not isinstance(value, dt.datetime):
        return dt.datetime.combine(value, dt.time(), tzinfo=zone)
    if value.tzinfo is None:
        return timezone.make_aware(value, zone)
    return value


def _day(value: dt.date) -> str:
    return f"{value:%A} {value.day} {value:%B %Y}"


def _zone(value: dt.datetime) -> str:
    if value.tzinfo is None:
        return ""
    return str(getattr(value.tzinfo, "key", None) or value.tzname() or "")


def describe_time(start: dt.date, end: dt.date | None) -> str:
    """The event's time as a person reads it, in the event's own zone.

    ``Tuesday 10 March 2026, 14:00–15:00 (Europe/Berlin)``; an all-day event
    ``Thursday 12 March 2026 (all day)`` or ``… – Friday 13 March 2026 (all day)`` (DTEND of
    a DATE is exclusive); an end before the start is ignored.
    """
    if not isinstance(start, dt.datetime):
        last = end - dt.timedelta(days=1) if isinstance(end, dt.date) and not isinstance(end, dt.datetime) else None
        if last is None or last <= start:
            return f"{_day(start)} (all day)"
        return f"{_day(start)} – {_day(last)} (all day)"
    zone = _zone(start)
    suffix = f" ({zone})" if zone else ""
    if isinstance(end, dt.datetime) and (end.tzinfo is None) == (start.tzinfo is None) and end > start:
        end = end.astimezone(start.tzinfo) if start.tzinfo is not None else end
        if end.date() == start.date():
            return f"{_day(start)}, {start:%H:%M}–{end:%H:%M}{suffix}"
        return f"{_day(start)} {start:%H:%M} – {_day(end)} {end:%H:%M}{suffix}"
    return f"{_day(start)}, {start:%H:%M}{suffix}"


_FREQ = {"SECONDLY": "second", "MINUTELY": "minute", "HOURLY": "hour", "DAILY": "day", "WEEKLY": "week",
         "MONTHLY": "month", "YEARLY": "year"}  # fmt: skip
_ADVERB = {"DAILY": "daily", "WEEKLY": "weekly", "MONTHLY": "monthly", "YEARLY": "yearly", "HOURLY": "hourly"}
_WEEKDAY = {"MO": "Monday", "TU": "Tuesday", "WE": "Wednesday", "TH": "Thursday", "FR": "Friday",
            "SA": "Saturday", "SU": "Sunday"}  # fmt: skip
_NTH = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last", -2: "second-to-last"}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _weekday(value: Any) -> str | None:
    match = re.fullmatch(r"([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)", str(value).upper())
    if match is None:
        return None
    name = _WEEKDAY[match.group(2)]
    if match.group(1) is None:
        return name
    nth = _NTH.get(int(match.group(1)))
    return f"the {nth} {name}" if nth else name


def describe_rule(rule: dict[str, list[Any]]) -> str:
    """An RRULE in words: ``repeats weekly on Tuesday and Thursday, 10 times``; "" if unreadable.

    Covers FREQ, INTERVAL, BYDAY, BYMONTHDAY, BYMONTH, COUNT and UNTIL; other parts
    (BYSETPOS, BYHOUR…) are left out rather than described wrongly.
    """
    freq = str((rule.get("FREQ") or [""])[0]).upper()
    if freq not in _FREQ:
        return ""
    try:
        interval = int((rule.get("INTERVAL") or [1])[0])
    except (TypeError, ValueError):
        interval = 1
    if interval > 1:
        words = f"repeats every {interval} {_FREQ[freq]}s"
    else:
        words = f"repeats {_ADVERB.get(freq, 'every ' + _FREQ[freq])}"
    days = [name for name in (_weekday(value) for value in rule.get("BYDAY") or []) if name]
    if days:
        words += " on " + _and(days)
    month_days = []
    for value in rule.get("BYMONTHDAY") or []:
        try:
            number = int(value)
        except (TypeError, ValueError):
            continue
        month_days.append("the last day" if number == -1 else f"day {number}")
    if month_days:
        words += " on " + _and(month_days)
    months = []
    for value in rule.get("BYMONTH") or []:
        try:
            months.append(_MONTHS[int(str(value).rstrip("L")) - 1])
        except (TypeError, ValueError, IndexError):
            continue
    if months:
        words += " in " + _and(months)
    if rule.get("COUNT"):
        words += f", {int(rule['COUNT'][0])} times"
    elif rule.get("UNTIL"):
        until = rule["UNTIL"][0]
        if isinstance(until, dt.date):
            words += f", until {_day(until)}"
    return words


def _person(address: Any) -> str:
    """A name for an ORGANIZER/ATTENDEE: its CN, else the address without ``mailto:``."""
    params = getattr(address, "params", {}) or {}
    name = " ".join(str(params.get("CN", "")).split()).strip('"')
    if name:
        return name[:MAX_FIELD]
    return re.sub(r"^mailto:", "", str(address).strip(), flags=re.IGNORECASE)[:MAX_FIELD]


def _description(event: Component) -> str:
    value = event.get("DESCRIPTION")
    if value is None or isinstance(value, list):
        return ""
    lines = [line.rstrip() for line in str(value).replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    text = "\n".join(line for line in lines if not _RULE_LINE.match(line))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "…"


def event_content(event: Component, start: dt.date, end: dt.date | None) -> str:
    """The memory text of one event: summary, time, rule, place, people, description.

    Deterministic for the same event, so a re-import compares equal (``unchanged``).
    """
    lines = [_text(event, "SUMMARY") or "(untitled event)", f"When: {describe_time(start, end)}"]
    rules = [described for described in (describe_rule(dict(rule)) for rule in _rules(event)) if described]
    if rules:
        repeats = _and(rules)
        lines.append(repeats[0].upper() + repeats[1:] + ".")
    if location := _text(event, "LOCATION"):
        lines.append(f"Where: {location}")
    organizer = event.get("ORGANIZER")
    if organizer is not None and not isinstance(organizer, list) and (name := _person(organizer)):
        lines.append(f"Organizer: {name}")
    attendees = event.get("ATTENDEE")
    people = [_person(one) for one in (attendees if isinstance(attendees, list) else [attendees] if attendees else [])]
    people = [name for name in dict.fromkeys(people) if name]
    if people:
        more = f" and {len(people) - MAX_PEOPLE} more" if len(people) > MAX_PEOPLE else ""
        lines.append(f"Attendees: {', '.join(people[:MAX_PEOPLE])}{more}")
    if description := _description(event):
        lines.extend(["", description])
    return "\n".join(lines)


def _rules(event: Component) -> list[Any]:
    value = event.get("RRULE")
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _label(number: int, event: Component) -> str:
    # Shown to the person and kept in reports: masked, as the summary may hold anything.
    summary, _counts = mask(_text(event, "SUMMARY", 60))
    return f'event {number} "{summary}"' if summary else f"event {number}"


@dataclass(frozen=True)
class _Readable:
    origin: str
    start: dt.date
    end: dt.date | None


def _read(event: Event, zones: dict[str, dt.timezone] | None = None) -> _Readable | str:
    """The event's key and times, or the reason it cannot be imported."""
    broken = sorted({name for name, _message in event.errors if name in _READ})
    if broken:
        return f"{_and(broken)} could not be read"
    status = event.get("STATUS")
    if status is not None and str(status).strip().upper() == "CANCELLED":
        return "cancelled"
    uid = _text(event, "UID", limit=10_000)
    if not uid:
        return "no UID"
    if unstorable(uid) is not None:  # a NUL or a lone surrogate: the origin lookup was a database error (500)
        return "its UID holds characters that cannot be stored"
    start = _in_own_zone(event, "DTSTART", getattr(event.get("DTSTART"), "dt", None), zones or {})
    if not isinstance(start, dt.date):
        return "no DTSTART (start date or time)"
    try:
        end = _in_own_zone(event, "DTEND", event.end, zones or {})
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
        # icalendar's errors for a missing or odd end; OverflowError for one past year 9999
        # (DTSTART 9999-12-31, DURATION P99999999D), which was a 500 halfway through an import.
        end = None
    if isinstance(end, dt.datetime) and end.tzinfo is None and isinstance(start, dt.datetime):
        end = end.replace(tzinfo=start.tzinfo)  # an end by DURATION from a start in the file's own zone
    recurrence = getattr(event.get("RECURRENCE-ID"), "dt", None)
    try:
        origin = _origin(uid, recurrence if isinstance(recurrence, dt.date) else None)
    except (OverflowError, ValueError):
        # Keyed in UTC: 0001-01-01T00:00 in Tokyo is a year before 1 (a 500, and a subscription
        # that never imported anything after this event).
        return "its RECURRENCE-ID is outside the years a date can hold"
    return _Readable(
        origin=origin,
        start=start,
        end=end if isinstance(end, dt.date) else None,
    )


# --------------------------------------------------------------------------- import


def calendar_import(
    *, actor: Member, data: bytes, source_name: str, workspace: str | None, max_events: int = MAX_EVENTS
) -> CalendarResult:
    """Import every VEVENT of an ICS file as ``actor``'s episodic memories (see the module docstring).

    ``source_name`` (a file or subscription name) labels the result and the log only: it is
    not part of the memory, so the same event reached by a file and by a subscription is one
    memory. ``workspace`` names the layer for new memories (else the member's default); an
    event imported before stays in the layer it is in.

    Raises ``PermissionDenied`` for an inactive member and ``MemoryInvalid`` for a file that
    is not iCalendar, over 5 MB, over ``max_events`` events (2,000; uploads pass
    ``MAX_EVENTS_PER_REQUEST``) or an unknown layer — before anything is stored. Per-event
    refusals are reported in ``skipped``; other events proceed.
    """
    if not isinstance(actor, Member) or not actor.is_active:
        raise PermissionDenied("only an active member has memories")
    layer = workspace_value(workspace)
    events, zones = _parse(data, max_events)
    result = CalendarResult(source=source_name, events=len(events))
    seen: set[str] = set()
    for number, event in enumerate(events, start=1):
        readable = _read(event, zones)
        if isinstance(readable, str):
            result.skipped.append(Skipped(_label(number, event), readable))
            continue
        if readable.origin in seen:
            result.skipped.append(Skipped(_label(number, event), "repeats an earlier event of this file (same UID)"))
            continue
        seen.add(readable.origin)
        try:
            content = event_content(event, readable.start, readable.end)
            started = _aware(readable.start)
        except (OverflowError, ValueError):
            # A time no calendar means (DTEND 9999-12-31 seen from UTC+14 is year 10000): this
            # event is skipped and named; the others go on.
            result.skipped.append(
                Skipped(_label(number, event), "its start or end is outside the years a date can hold")
            )
            continue
        try:
            # A savepoint per event: a refusal inside the pipeline leaves nothing of this one.
            with transaction.atomic():
                capture = memory_capture_from(
                    actor=actor, origin=readable.origin, content=content,
                    source=SOURCE, kind=Kind.EPISODIC, occurred_at=started, tags=[TAG],
                    workspace=layer, written_elsewhere=True,
                )  # fmt: skip
        except (MemoryInvalid, SecretRefused, NulRefused) as refused:
            result.skipped.append(Skipped(_label(number, event), str(refused)))
            continue
        except Memory.DoesNotExist:  # its earlier copy was forgotten while this import ran
            result.skipped.append(Skipped(_label(number, event), "changed while importing; import again"))
            continue
        outcome = "stored" if capture.outcome == "flagged" else capture.outcome
        setattr(result, outcome, getattr(result, outcome) + 1)
    logger.info("calendar import for member %s: %s", actor.pk, result.summary())
    return result


# --------------------------------------------------------------------------- subscriptions


def _allow_private() -> bool:
    return bool(getattr(settings, "BRAIN_CALENDAR_ALLOW_PRIVATE", False))


def calendar_subscribe(*, actor: Member, url: str, name: str, workspace: str | None) -> CalendarSubscription:
    """Subscribe ``actor`` to an ICS URL (``webcal://`` is stored as ``https://``).

    The URL is checked now (scheme, no credentials, a host that resolves to public
    addresses unless ``BRAIN_CALENDAR_ALLOW_PRIVATE``) and again on every fetch. Nothing is
    fetched here: its first fetch is queued (``calendar_refresh_requested``) for a worker.
    ``MemoryInvalid`` names what is wrong: the URL, the name (1–80 characters), the layer, the
    same URL twice, or more than 20 subscriptions.
    """
    if not isinstance(actor, Member) or not actor.is_active:
        raise PermissionDenied("only an active member has memories")
    clean = check_subscription_url(url, allow_private=_allow_private())
    label = " ".join((name or "").split())
    if not label or len(label) > 80:
        raise MemoryInvalid("name the calendar (1 to 80 characters)")
    refuse(label, field="name")  # shown on the page and in every refresh's log line
    layer = workspace_value(workspace) or ""
    with transaction.atomic():
        if CalendarSubscription.objects.filter(member=actor).count() >= MAX_SUBSCRIPTIONS:
            raise MemoryInvalid(f"at most {MAX_SUBSCRIPTIONS} calendar subscriptions; remove one first")
        try:
            with transaction.atomic():
                subscription = CalendarSubscription.objects.create(
                    member=actor, name=label, url=clean, workspace=layer, refresh_requested_at=timezone.now()
                )
        except IntegrityError:
            raise MemoryInvalid("you already subscribe to this calendar URL") from None
        enqueue_on_commit("memory.calendar_refresh", subscription.pk)
        return subscription


def calendar_refresh_request(*, actor: Member, subscription_id: Any) -> CalendarSubscription:
    """ "Refresh now": queue a fetch of one of ``actor``'s subscriptions for a worker (a fetch may
    take 30 s and an import embeds up to 2,000 events — never a web request's work). Asking
    again while one is queued queues nothing more. Another member's is ``DoesNotExist``."""
    with transaction.atomic():
        subscription = calendar_subscription_get(actor=actor, subscription_id=subscription_id)
        if subscription.refresh_requested_at is None:
            subscription.refresh_requested_at = timezone.now()
            CalendarSubscription.objects.filter(pk=subscription.pk, refresh_requested_at__isnull=True).update(
                refresh_requested_at=subscription.refresh_requested_at
            )
            enqueue_on_commit("memory.calendar_refresh", subscription.pk)
    return subscription


def calendar_refresh_requested(subscription_id: int) -> CalendarResult | None:
    """The queued fetch of one subscription (``memory.calendar_refresh``): claimed first, so a
    message sent twice, or the sweep at the same moment, fetches it once; None when there was
    nothing to do (done already, removed, or its member is no longer active)."""
    now = timezone.now()
    claimed = (
        CalendarSubscription.objects.filter(
            pk=subscription_id, refresh_requested_at__isnull=False, member__is_active=True, member__user__is_active=True
        )
        .filter(_unclaimed(now))
        .update(fetch_started_at=now, last_checked_at=now)
    )
    if claimed != 1:
        return None
    subscription = CalendarSubscription.objects.select_related("member").get(pk=subscription_id)
    return calendar_refresh(subscription)


def calendar_subscriptions(*, actor: Member) -> list[CalendarSubscription]:
    """``actor``'s own subscriptions, oldest first (nobody sees another member's)."""
    return list(CalendarSubscription.objects.filter(member=actor).order_by("created_at", "pk"))


def calendar_subscription_get(*, actor: Member, subscription_id: Any) -> CalendarSubscription:
    """One of ``actor``'s subscriptions; another member's is ``DoesNotExist``, as a missing one."""
    try:
        key = int(subscription_id)
    except (TypeError, ValueError):
        raise CalendarSubscription.DoesNotExist("no such calendar subscription") from None
    return CalendarSubscription.objects.select_related("member").get(pk=key, member=actor)


def calendar_unsubscribe(*, actor: Member, subscription_id: Any) -> None:
    """Remove one of ``actor``'s subscriptions; the memories it brought in stay.

    Another member's subscription is ``CalendarSubscription.DoesNotExist``, as a missing one.
    """
    with transaction.atomic():
        calendar_subscription_get(actor=actor, subscription_id=subscription_id).delete()


def calendar_refresh(subscription: CalendarSubscription) -> CalendarResult:
    """Fetch one subscription and import what changed; never raises.

    A conditional GET (the stored ETag / Last-Modified); 304 imports nothing. The outcome
    lands on the row: ``last_checked_at`` always, ``last_error`` (cleared on success),
    ``events_seen``, and the new validators only after a successful import (so a failed
    import is fetched whole next time). The row is written with a filtered update, so a
    subscription removed meanwhile is not brought back.
    """
    result = CalendarResult(source=subscription.name)
    changes: dict[str, Any] = {}
    try:
        fetched = fetch_calendar(
            subscription.url,
            etag=subscription.etag,
            last_modified=subscription.last_modified,
            allow_private=_allow_private(),
        )
        if fetched.not_modified:
            result.not_modified = True
        else:
            result = calendar_import(
                actor=subscription.member, data=fetched.body, source_name=subscription.name,
                workspace=subscription.workspace or None,
            )  # fmt: skip
            changes = {"etag": fetched.etag, "last_modified": fetched.last_modified, "events_seen": result.events}
    except (MemoryInvalid, PermissionDenied) as refused:
        result.error = str(refused) or "refused"
    except SoftTimeLimitExceeded:
        raise  # the task's time is up: stop the sweep (the claim keeps this one from looping)
    except Exception:
        # The sweep goes on with the next subscription; the traceback is in the log.
        logger.exception("calendar refresh of subscription %s failed", subscription.pk)
        result.error = "an unexpected error; it was logged"
    CalendarSubscription.objects.filter(pk=subscription.pk).update(
        last_checked_at=timezone.now(), last_error=result.error[:300], refresh_requested_at=None,
        fetch_started_at=None, **changes,
    )  # fmt: skip
    return result


# A claim older than this is a worker that died mid-fetch (a fetch is bounded at 30 s, an
# import by the task's 300 s limit): the row may be claimed again.
STALE_CLAIM = dt.timedelta(minutes=10)


def _unclaimed(now: dt.datetime) -> Q:
    return Q(fetch_started_at__isnull=True) | Q(fetch_started_at__lt=now - STALE_CLAIM)


def calendar_refresh_due(*, limit: int = 50, seconds: float = 240.0) -> int:
    """Refresh up to ``limit`` subscriptions not checked for ``BRAIN_CALENDAR_REFRESH_SECONDS``
    (default 3600), or whose person asked for a refresh (a queued message lost, or its worker
    gone), never-checked and oldest first, of active members; returns how many ran.

    Each one is claimed first (a conditional update of ``last_checked_at``), so two sweeps
    running at once never fetch the same calendar twice. No new one starts after
    ``seconds`` (within the task's soft time limit of 300 s). Errors are recorded per
    subscription, never raised.
    """
    interval = dt.timedelta(seconds=int(getattr(settings, "BRAIN_CALENDAR_REFRESH_SECONDS", 3600)))
    now = timezone.now()
    due = (
        CalendarSubscription.objects.filter(member__is_active=True, member__user__is_active=True)
        .filter(
            Q(last_checked_at__isnull=True)
            | Q(last_checked_at__lt=now - interval)
            | Q(refresh_requested_at__lt=now - dt.timedelta(seconds=60))  # its queued fetch never came
        )
        .select_related("member")
        .order_by(F("last_checked_at").asc(nulls_first=True), "pk")[:limit]
    )
    stop = time.monotonic() + seconds
    refreshed = 0
    for subscription in list(due):
        if time.monotonic() > stop:
            break
        moment = timezone.now()
        claimed = (
            CalendarSubscription.objects.filter(pk=subscription.pk, last_checked_at=subscription.last_checked_at)
            .filter(_unclaimed(moment))
            .update(last_checked_at=moment, fetch_started_at=moment)
        )
        if claimed != 1:
            continue  # another sweep took it (or it was removed)
        calendar_refresh(subscription)
        refreshed += 1
    return refreshed
