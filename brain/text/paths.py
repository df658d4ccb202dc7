"""Canonical paths: rejected, never repaired.

A normaliser that folds can be made to collide, and a collision in a path is a collision
in an access rule. So a path either is canonical or is refused with the rule it breaks.

Page path: lower-case ASCII letters, digits, ``-``, ``_``, ``.``; segments joined by a
single ``/``; no leading or trailing ``/``; no ``.``/``..`` segments or segments starting
with ``.``; ends in ``.md``, and no folder does; at most 255 characters.

Grant scope path: ``''`` (everything), a prefix ending in ``/``, or an exact path under
the same segment rules.
"""

from __future__ import annotations

import re
import unicodedata

from brain.domain import DomainError

MAX_LENGTH = 255
_SEGMENT = re.compile(r"^[a-z0-9_-][a-z0-9._-]*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_BIDI_AND_ZERO_WIDTH = {
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",  # zero-width
    "\u200e", "\u200f", "\u061c",  # marks
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",  # embeddings/overrides
    "\u2066", "\u2067", "\u2068", "\u2069",  # isolates
}  # fmt: skip


class PathError(DomainError, ValueError):
    """A path is not canonical. ``rule`` is a stable code; the message says what to fix."""

    code = "invalid_path"

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def _check_characters(path: str) -> None:
    if "\x00" in path:
        raise PathError("nul", "path contains a NUL character")
    for char in path:
        if char in _BIDI_AND_ZERO_WIDTH:
            raise PathError("invisible", "path contains a zero-width or bidirectional control character")
    for char in path:
        if ord(char) > 127:
            raise PathError("non_ascii", "path must be ASCII only (no accented letters, homoglyphs or other scripts)")
    if any(char.isspace() for char in path) or any(unicodedata.category(c) == "Cc" for c in path):
        raise PathError("whitespace", "path must not contain whitespace or control characters")
    if "\\" in path:
        raise PathError("backslash", "path must use '/' as separator, not '\\'")
    if "%" in path:
        raise PathError("percent_encoding", "path must not be %-encoded")
    if _SCHEME.match(path) or "://" in path:
        raise PathError("scheme", "path must be a corpus path, not a URL")
    if any(c.isupper() for c in path):
        raise PathError("uppercase", "path must be lower-case")


def _check_segments(segments: list[str]) -> None:
    for segment in segments:
        if segment == "":
            raise PathError("empty_segment", "path must not contain '//'")
        if segment in {".", ".."}:
            raise PathError("dot_segment", "path must not contain '.' or '..' segments")
        if segment.startswith("."):
            raise PathError("hidden_segment", "path segments must not start with '.'")
        if not _SEGMENT.fullmatch(segment):
            raise PathError("character", "path may only contain a-z, 0-9, '-', '_', '.' and '/'")


def validate_page_path(path: object) -> str:
    """Return ``path`` unchanged if it is a canonical page path; raise ``PathError`` otherwise."""
    if not isinstance(path, str):
        raise PathError("type", "path must be a string")
    if path == "":
        raise PathError("empty", "path must not be empty")
    if len(path) > MAX_LENGTH:
        raise PathError("too_long", f"path must be at most {MAX_LENGTH} characters")
    _check_characters(path)
    if path.startswith("/"):
        raise PathError("leading_slash", "path must not start with '/'")
    if path.endswith("/"):
        raise PathError("trailing_slash", "page path must not end with '/'")
    _check_segments(path.split("/"))
    if not path.endswith(".md"):
        raise PathError("extension", "page path must end in '.md'")
    if any(folder.endswith(".md") for folder in path.split("/")[:-1]):
        # topics/a.md and topics/a.md/b.md: one name both a page and a folder, which no file
        # tree (an export, the git mirror, a build's folder) can hold.
        raise PathError("folder_extension", "a folder in a page path must not end in '.md'")
    return path


def validate_scope_path(path: object) -> str:
    """Validate a grant path scope: ``''``, a prefix ending in ``/`` or an exact path."""
    if not isinstance(path, str):
        raise PathError("type", "path must be a string")
    if path == "":
        return path
    if len(path) > MAX_LENGTH:
        raise PathError("too_long", f"path must be at most {MAX_LENGTH} characters")
    _check_characters(path)
    if path.startswith("/"):
        raise PathError("leading_slash", "path must not start with '/'")
    body = path[:-1] if path.endswith("/") else path
    _check_segments(body.split("/"))
    return path


_CATEGORY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def validate_category(category: object) -> str:
    """A category: 1–64 of a-z, 0-9, '-', '_', starting with a letter or digit."""
    if not isinstance(category, str) or not _CATEGORY.fullmatch(category):
        raise PathError("category", "category must be 1-64 characters of a-z, 0-9, '-', '_' (starting a-z or 0-9)")
    return category
