"""Memory → corpus: propose a shared memory as a page, through a build a person reviews.

The memory becomes a capture on a new build's branch (kind ``note``, its text and a link
back to the memory) and a draft page cites it: a new page, or a section added to an
existing one. Nothing reaches the live corpus here; the build goes through the normal
review and promotion by a person. A personal memory is refused: it is its author's alone
until they share it.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from builds.models import Build
from builds.services import (
    build_add_section,
    build_open,
    build_record_capture,
    build_write_page,
    builds_cancel_carrying,
)
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.models import Memory, Workspace

PAGE_TYPE_DEFAULT = "topic"
CAPTURE_KEY_PREFIX = "memory/"


def memory_proposals_withdraw(*, actor: Member, memory: Memory, why: str) -> int:
    """Cancel the open proposals that copied ``memory`` (un-shared or forgotten: ``why``), so its
    words do not reach the corpus after its author took them back; returns how many.

    A proposal's capture keeps the memory's address, which is how it is found. Runs inside
    the caller's transaction. A proposal already promoted stays: a person approved it.
    """
    return builds_cancel_carrying(
        actor=actor,
        key_prefix=CAPTURE_KEY_PREFIX,
        uri_suffix=reverse("memory:detail", args=[memory.pk]),
        reason=f"the memory it proposed was {why}",
    )


def _first_line(text: str, limit: int = 80) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    line = line.lstrip("#").strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _yaml_text(value: str) -> str:
    """A YAML double-quoted scalar (titles may hold ``:`` or ``#``): JSON strings are valid YAML."""
    return json.dumps(value, ensure_ascii=False)


def memory_propose_page(
    *,
    actor: Member,
    memory_id: Any,
    path: str,
    title: str = "",
    page_type: str = PAGE_TYPE_DEFAULT,
    add_to_existing: bool = False,
) -> Build:
    """Open a build holding the memory as a capture and a draft page citing it; return the build.

    ``add_to_existing``: append a section to the page at ``path`` (which the actor must be
    able to read) instead of writing a new page. Everything happens in one transaction: a
    refused path, a missing page or a missing ``suggest`` grant leaves no build behind.
    Raises ``Memory.DoesNotExist`` (not visible), ``MemoryInvalid`` (a personal memory),
    and the builds/corpus errors (``ValidationError``, ``PermissionDenied``, ``Page.DoesNotExist``).
    """
    if not actor.is_active:
        raise PermissionDenied("only an active member proposes pages")
    memory = Memory.objects.visible_to(actor).get_by_id(memory_id)
    if memory.workspace != Workspace.COMPANY:
        raise MemoryInvalid("only a shared memory can be proposed as a page: share it with the team first")
    heading = " ".join((title or _first_line(memory.content)).split()) or "From the team's memory"
    with transaction.atomic():
        build = build_open(
            actor=actor,
            title=f"From memory: {heading}"[:200],
            purpose=f"Proposed from the shared memory {memory.pk} written by {memory.author.display_name}.",
        )
        capture = build_record_capture(
            build=build,
            key=f"{CAPTURE_KEY_PREFIX}{str(memory.pk)[:8]}",
            kind="note",
            title=heading[:300],
            text=memory.content,
            uri=settings.BRAIN_BASE_URL + reverse("memory:detail", args=[memory.pk]),
            captured_at=memory.occurred_at or memory.created_at,
        )
        key = capture.source.key
        if add_to_existing:
            build_add_section(build=build, path=path, heading=heading, text=memory.content, cite=key)
        else:
            markdown = (
                "---\n"
                f"type: {page_type}\n"
                f"owner: {actor.username}\n"
                "status: draft\n"
                "change_policy: gate\n"
                f"as_of: {timezone.localdate().isoformat()}\n"
                f"title: {_yaml_text(heading)}\n"
                "sources:\n"
                f"  - capture:{key}\n"
                "---\n\n"
                f"# {heading}\n\n{memory.content.strip()}\n"
            )
            build_write_page(build=build, path=path, markdown=markdown)
    return build
