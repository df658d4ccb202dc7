"""Deterministic reading of a memory when no model is configured.

Tag normalisation, hashtags, and heuristics for importance, kind and volatility. The
heuristics only fill in what the caller did not say, and never make a memory canonical:
that takes an explicit ``status:canonical`` tag or ``set_status``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from brain.domain import DomainError
from brain.text.secrets import refuse
from corpus.lexical import normalise
from memory.models import MAX_TAG_LENGTH, MAX_TAGS, Kind, Status, Volatility


class MemoryInvalid(DomainError, ValueError):
    """A capture or edit that cannot be stored; the message names what is wrong."""


# A hashtag: '#' at a word start, then letters/digits/-/_/: (Unicode letters included).
_HASHTAG = re.compile(r"(?<![\w&])#([^\W_][\w:-]{0,126})", re.UNICODE)
_STATUS_PREFIX = "status:"
# Tags that steer what a memory does, not what it is about: its status, and whether (and
# where) it enters a prompt capsule that agents are given as instructions.
CONTROL_PREFIXES = (_STATUS_PREFIX, "capsule:", "capsule-slot:")


@dataclass(frozen=True)
class Tags:
    tags: list[str]
    status: str | None  # from a ``status:<value>`` tag, if one was given


MAX_WRITTEN_TAGS = 4 * MAX_TAGS  # entries a list may hold (spellings of one tag repeat)


def tag_as_stored(tag: str) -> str:
    """A tag as a filter looks for it: spelled as ``normalise_tags`` stores it (NFKC, trimmed,
    lower-cased, a leading ``#`` dropped): ``?tag=#Urgent`` finds ``urgent``, as written."""
    return normalise(tag).strip().lower().lstrip("#").strip()


def normalise_tags(raw: list[str] | None, content: str = "", *, controls_in_content: bool = True) -> Tags:
    """Trim, lower-case and de-duplicate tags; add ``#hashtags`` from ``content``.

    ``controls_in_content=False`` (text someone else wrote: a calendar invite, a forwarded
    mail) drops the content's hashtags that are control tags (``CONTROL_PREFIXES``): an
    invitation reading ``#status:canonical #capsule:core`` made itself canonical and entered
    every agent's prompt capsule.

    A tag written ``#urgent`` is ``urgent`` (as a hashtag in the text, and as a vault's front
    matter reads it: an export and re-import changes nothing). A ``status:<value>`` tag sets the
    status instead of being stored as a tag. Raises ``MemoryInvalid`` for more than 64 tags, a
    tag over 128 characters, a comma in a tag (forms separate tags with commas: such a tag
    could never be edited whole) or an unknown status.
    """
    if raw is not None and (not isinstance(raw, list) or not all(isinstance(tag, str) for tag in raw)):
        raise MemoryInvalid("tags must be a list of strings")
    if raw is not None and len(raw) > MAX_WRITTEN_TAGS:
        # Before any is read: each is scanned for secrets (200,000 of "x" took 5.5 s).
        raise MemoryInvalid(f"a memory may carry at most {MAX_TAGS} tags ({len(raw):,} were sent)")
    found: dict[str, None] = {}
    # Each spelling once (as written: lower-casing would hide a token whose shape is its case),
    # and no further than one tag past the limit.
    hashtags = _HASHTAG.findall(normalise(content))
    if not controls_in_content:
        hashtags = [tag for tag in hashtags if not normalise(tag).lower().startswith(CONTROL_PREFIXES)]
    for tag in dict.fromkeys([*(raw or []), *hashtags]):
        refuse(tag, field="tag")
        clean = tag_as_stored(tag)
        if not clean:
            continue
        if "," in clean:
            raise MemoryInvalid(f"a tag cannot contain a comma: {clean[:40]!r} (write two tags)")
        if len(clean) > MAX_TAG_LENGTH:
            raise MemoryInvalid(f"a tag may be at most {MAX_TAG_LENGTH} characters")
        if "\x00" in clean:
            raise MemoryInvalid("tags refused: a tag contains a NUL character")
        found[clean] = None
        if len(found) > MAX_TAGS + len(Status.values):  # status tags are not stored as tags
            break
    status = None
    tags: list[str] = []
    for tag in found:
        if tag.startswith(_STATUS_PREFIX):
            value = tag[len(_STATUS_PREFIX) :]
            if value not in Status.values:
                raise MemoryInvalid(f'status must be "canonical", "draft" or "deprecated", not "{value}"')
            status = value
        else:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise MemoryInvalid(f"a memory may carry at most {MAX_TAGS} tags")
    return Tags(tags=tags, status=status)


_IMPORTANT = re.compile(
    r"\b(decided|decision|must|never|always|policy|critical|deadline|agreed|contract|security|legal)\b", re.I
)
_TRIVIAL = re.compile(r"\b(maybe|might|idea|random|fyi|btw)\b", re.I)
_EPISODIC = re.compile(
    r"\b(today|yesterday|tonight|this morning|last (week|night|month)|met|meeting|called|visited|"
    r"happened|on (monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b|\b\d{4}-\d{2}-\d{2}\b",
    re.I,
)
_VOLATILE = re.compile(r"\b(today|tonight|tomorrow|this week|right now|for now|temporarily|until)\b", re.I)
_STATE = re.compile(r"\b(currently|working on|in progress|status|blocked|waiting|is now|are now|at the moment)\b", re.I)


def classify_importance(content: str, tags: list[str]) -> int:
    score = 3
    if _IMPORTANT.search(content) or "important" in tags:
        score += 1
    if _TRIVIAL.search(content) and score == 3:
        score -= 1
    return max(1, min(5, score))


def classify_kind(content: str) -> str:
    return Kind.EPISODIC if _EPISODIC.search(content) else Kind.SEMANTIC


def classify_volatility(content: str) -> str:
    if _VOLATILE.search(content):
        return Volatility.VOLATILE
    if _STATE.search(content):
        return Volatility.STATE
    return Volatility.DURABLE
