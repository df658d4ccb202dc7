"""A note's YAML front matter, read as a bounded, plain mapping.

PyYAML's safe loader, minus anchors and aliases (an alias expands one node many times: a
few hundred bytes of "billion laughs" cost seconds), with the text capped at 64 KB and
nesting at 8 levels (PyYAML composes nested collections recursively). Anything else is
``FrontMatterInvalid`` with a message that names the rule, never the text.
"""

from __future__ import annotations

from typing import Any

import yaml

from brain.inputs import nested_deeper_than

MAX_BYTES = 64 * 1024
MAX_DEPTH = 8


class FrontMatterInvalid(ValueError):
    """The front matter cannot be read; the message says why."""


class _PlainLoader(yaml.SafeLoader):
    """The safe loader without anchors and aliases: front matter is a few plain keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(None, None, "anchors and aliases are not allowed", event.start_mark)
        return super().compose_node(parent, index)


def split(text: str) -> tuple[str | None, str]:
    """(the front matter's YAML or None, the body) of a note whose newlines are ``\\n``.

    Front matter is a first line ``---`` and a closing ``---`` (or ``...``) line, as Obsidian
    reads it; an unclosed block is body text.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None, text
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    return None, text


def load(raw: str) -> dict[str, Any]:
    """The front matter as a mapping ({} when empty); ``FrontMatterInvalid`` otherwise."""
    if len(raw.encode("utf-8")) > MAX_BYTES:
        raise FrontMatterInvalid(f"front matter is larger than {MAX_BYTES // 1024} KB")
    # Counting brackets first refuses a deep flow collection before the recursive composer
    # spends its stack on it (quotes are not parsed here, so this bound is the looser one).
    if nested_deeper_than(raw, 8 * MAX_DEPTH):
        raise FrontMatterInvalid(f"front matter is nested more than {MAX_DEPTH} levels deep")
    try:
        value = yaml.load(raw, Loader=_PlainLoader)  # noqa: S506 (a SafeLoader subclass)
    except RecursionError:
        raise FrontMatterInvalid(f"front matter is nested more than {MAX_DEPTH} levels deep") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise FrontMatterInvalid(f"front matter is not valid YAML{where}: {problem}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontMatterInvalid("front matter must be key: value pairs")
    if _depth(value) > MAX_DEPTH:
        raise FrontMatterInvalid(f"front matter is nested more than {MAX_DEPTH} levels deep")
    return {str(key): item for key, item in value.items()}


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest
