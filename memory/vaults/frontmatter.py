"""A note's YAML front matter, read as a bounded, plain mapping.

``brain.text.plain_yaml`` (the corpus's frontmatter reader too): no anchors or aliases, at most
64 KB, nested at most 8 levels. Anything else is ``FrontMatterInvalid`` with a message that
names the rule, never the text.
"""

from __future__ import annotations

from typing import Any

import yaml

from brain.text.plain_yaml import PlainYamlRefused, load_plain_yaml

MAX_BYTES = 64 * 1024
MAX_DEPTH = 8


class FrontMatterInvalid(ValueError):
    """The front matter cannot be read; the message says why."""


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
    try:
        value = load_plain_yaml(raw, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, what="front matter")
    except PlainYamlRefused as exc:
        raise FrontMatterInvalid(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise FrontMatterInvalid(f"front matter is not valid YAML{where}: {problem}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontMatterInvalid("front matter must be key: value pairs")
    return {str(key): item for key, item in value.items()}
