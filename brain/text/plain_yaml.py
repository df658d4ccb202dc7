"""Plain YAML: PyYAML's safe loader without anchors and aliases, bounded in size and depth.

Front matter (of a corpus page, of an imported note) is a few plain keys. An alias makes YAML
expand one node many times ("billion laughs": 529 bytes took a web worker 15 s), and PyYAML
composes nested collections recursively (a deep one costs a second of stack before it fails),
so both are refused before anything expands. Every refusal is ``PlainYamlRefused`` naming the
rule broken, never the text.
"""

from __future__ import annotations

from typing import Any

import yaml

from brain.inputs import nested_deeper_than


class PlainYamlRefused(ValueError):
    """The YAML is not plain, or too large or too deep; the message names the rule."""


class _PlainLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed", event.start_mark)  # type: ignore[arg-type]
        if getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(None, None, "anchors (&name) are not allowed", event.start_mark)
        return super().compose_node(parent, index)


_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"


class _PlainKeysLoader(_PlainLoader):
    """Plain YAML whose mapping keys are each written once, as text, and never merged in: a
    page's ``owner: nobody`` then ``owner: alice`` (the last silently won, both shown to the
    reviewer), ``<<: {owner: alice}`` (an owner set by a line that does not say owner), or
    ``1: x`` (a number key: a server error further on) are refused, naming the line."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, _value in node.value:
                problem = None
                if key_node.tag == _MERGE:
                    problem = "merge keys (<<) are not allowed"
                elif key_node.tag != _STR:
                    problem = f"keys must be text (quote {key_node.value!s:.40} if it is one)"
                elif key_node.value in seen:
                    problem = f"the key {key_node.value!s:.40} is written twice"
                if problem:
                    raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


def depth(value: Any) -> int:
    """How deeply ``value``'s mappings and lists nest (a scalar: 0)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def load_plain_yaml(text: str, *, max_bytes: int, max_depth: int, what: str, plain_keys: bool = False) -> Any:
    """``text`` parsed; ``what`` ("frontmatter", "front matter") names it in the refusals.

    Raises ``PlainYamlRefused`` for size and depth, and lets ``yaml.YAMLError`` (anchors and
    aliases included, as ``ComposerError``; with ``plain_keys``, duplicate, merged and non-text
    keys as ``ConstructorError``; a value its type cannot hold, as ``ConstructorError`` too)
    through for the caller to word.
    """
    if len(text.encode("utf-8")) > max_bytes:
        raise PlainYamlRefused(f"{what} is larger than {max_bytes // 1024} KB")
    # Counting brackets first refuses a deep flow collection at once (quotes are not parsed
    # here, so this bound is looser than the real one below).
    if nested_deeper_than(text, 8 * max_depth):
        raise PlainYamlRefused(f"{what} is nested more than {max_depth} levels deep")
    try:
        loader = _PlainKeysLoader if plain_keys else _PlainLoader
        value = yaml.load(text, Loader=loader)  # noqa: S506 (a SafeLoader subclass)
    except RecursionError:
        raise PlainYamlRefused(f"{what} is nested more than {max_depth} levels deep") from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError):
        # PyYAML's constructors raise these, not a YAMLError, for a value its type cannot hold:
        # ``2024-02-30``, ``!!timestamp soon``, ``!!bool maybe``, ``!!int twelve``.
        raise yaml.constructor.ConstructorError(
            None, None, "a value is not what its type says (a date that does not exist, or a !!tag it does not fit)"
        ) from None
    if depth(value) > max_depth:
        raise PlainYamlRefused(f"{what} is nested more than {max_depth} levels deep")
    return value
