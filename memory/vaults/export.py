"""A member's memories as an Obsidian vault: every memory they wrote (both layers), one note each.

A note is ``<layer>/<slug>-<first 8 hex of the id>.md`` (layer ``personal`` or ``company``;
the slug from the memory's first line): YAML front matter (``brain_id``, ``layer``,
``status``, ``kind``, ``tags``, ``created``, ``occurred`` when set, ``source``, ``origin`` when
set), then the memory's content exactly, then — when it links to other exported memories —
a ``## Links`` block of ``- <type> [[<layer>/<note>]]`` lines under a marker.

Importing the vault back into the same account changes nothing: ``brain_id`` names the
memory each note came from, so the import compares with that memory instead of capturing a
copy (which the duplicate check would only have reported as a duplicate), and the links
block is read back as typed links and left out of the content. Imported into another account
(a member back after leaving, another brain), each note is its memory's text as it was, in its
``layer`` unless the import names one. Notes are written in a fixed
order with fixed zip timestamps, so the same memories give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from django.db.models.functions import Substr
from django.utils.text import slugify

from corpus.export import ExportFile, zip_stream
from grants.models import Member
from memory.models import Memory, MemoryLink
from memory.vaults.obsidian import LINKS_HEADING, LINKS_MARKER

BATCH = 200
SLUG_CHARS = 60


def _slug(first_characters: str) -> str:
    line = next((line for line in first_characters.splitlines() if line.strip()), "")
    return slugify(line.lstrip("#").strip(), allow_unicode=True)[:SLUG_CHARS].strip("-") or "memory"


def _note_paths(member: Member) -> dict[Any, str]:
    """Every exported memory's note path (without ``.md``), from its id, layer and first line."""
    paths: dict[Any, str] = {}
    taken: set[str] = set()
    rows = (
        Memory.objects.filter(author=member)
        .order_by("created_at", "id")
        .annotate(head=Substr("content", 1, 200))
        .values_list("pk", "workspace", "head")
    )
    for pk, workspace, head in rows.iterator(chunk_size=2000):
        path = f"{workspace}/{_slug(head)}-{pk.hex[:8]}"
        if path in taken:  # two memories with one slug and the same first 8 hex digits
            path = f"{workspace}/{_slug(head)}-{pk.hex}"
        taken.add(path)
        paths[pk] = path
    return paths


def _links(member: Member) -> dict[Any, list[tuple[str, Any]]]:
    """Each exported memory's links to other exported memories: (type, target id)."""
    found: dict[Any, list[tuple[str, Any]]] = {}
    rows = (
        MemoryLink.objects.filter(from_memory__author=member, to_memory__author=member)
        .order_by("from_memory_id", "type", "to_memory_id")
        .values_list("from_memory_id", "type", "to_memory_id")
    )
    for source, kind, target in rows.iterator(chunk_size=2000):
        found.setdefault(source, []).append((kind, target))
    return found


def note_text(memory: Memory, links: list[tuple[str, str]]) -> str:
    """One memory as an Obsidian note; ``links`` are (type, target note path) pairs."""
    meta: dict[str, Any] = {
        "brain_id": str(memory.pk),
        "layer": memory.workspace,
        "status": memory.status,
        "kind": memory.kind,
        "tags": list(memory.tags),
        "created": memory.created_at.isoformat(),
    }
    if memory.occurred_at is not None:
        meta["occurred"] = memory.occurred_at.isoformat()
    if memory.source:
        meta["source"] = memory.source
    if memory.origin:
        meta["origin"] = memory.origin
    header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, default_flow_style=False)
    text = f"---\n{header}---\n{memory.content}\n"
    # The import reads the last links block as links and leaves it out of the content. A
    # memory whose own text holds the marker gets a block after it (empty when it links to
    # nothing), so its text is never taken for the block.
    if links or LINKS_MARKER in memory.content:
        lines = "".join(f"- {kind} [[{target}]]\n" for kind, target in links)
        text += f"\n{LINKS_HEADING}\n{LINKS_MARKER}\n{lines}"
    return text


def obsidian_files(member: Member) -> Iterator[ExportFile]:
    """Every memory ``member`` wrote, oldest first, as vault files (read in batches)."""
    paths = _note_paths(member)
    links = _links(member)
    memories = (
        Memory.objects.filter(author=member)
        .order_by("created_at", "id")
        .defer("embedding", "lexical", "cjk_terms", "search_vector")
    )
    for memory in memories.iterator(chunk_size=BATCH):
        path = paths.get(memory.pk)
        if path is None:  # written after the paths were read: the next export has it
            continue
        targets = [(kind, paths[target]) for kind, target in links.get(memory.pk, []) if target in paths]
        yield ExportFile(path=f"{path}.md", data=note_text(memory, targets).encode("utf-8"))


def obsidian_export(member: Member) -> Iterator[bytes]:
    """The vault as a zip, yielded piece by piece as it is written (``corpus.export.zip_stream``)."""
    return zip_stream(obsidian_files(member))
