"""The one MCP tool catalogue. Every tool is defined once; who sees it is a projection.

A tool names the credential kinds that may use it (``person``: an OAuth token of a
member; ``build``: a build credential) and, for people, the OAuth scopes it needs.
``tools_for(caller)`` is the projection used by both ``tools/list`` and ``tools/call``:
a tool outside it is answered exactly like a tool that does not exist.

Handlers validate input with their pydantic model, call selectors and services, and
return a pydantic output model; ``structuredContent`` is its JSON dump, so it conforms
to the advertised output schema by construction.
"""

from __future__ import annotations

from mcp_api.base import BUILD, PERSON, QUESTION, SCOPE_CORPUS_READ, SCOPE_MEMORY, Args, Caller, Out, Tool
from mcp_api.tools.answers import ANSWER_TOOLS
from mcp_api.tools.branch import BRANCH_TOOLS
from mcp_api.tools.corpus import CORPUS_TOOLS
from mcp_api.tools.memory import MEMORY_TOOLS

__all__ = [
    "BUILD",
    "CATALOGUE",
    "PERSON",
    "QUESTION",
    "SCOPE_CORPUS_READ",
    "SCOPE_MEMORY",
    "Args",
    "Caller",
    "Out",
    "Tool",
    "tool_for",
    "tools_for",
]

CATALOGUE: tuple[Tool, ...] = (*CORPUS_TOOLS, *BRANCH_TOOLS, *MEMORY_TOOLS, *ANSWER_TOOLS)
_BY_NAME = {tool.name: tool for tool in CATALOGUE}


def tools_for(caller: Caller) -> list[Tool]:
    """The projection of the catalogue for ``caller`` (used by list *and* call)."""
    visible = []
    for tool in CATALOGUE:
        if caller.kind not in tool.kinds:
            continue
        if caller.kind == PERSON and not (tool.scopes & caller.scopes):
            continue
        visible.append(tool)
    return visible


def tool_for(caller: Caller, name: str) -> Tool | None:
    """The tool ``name`` if ``caller`` may use it; None exactly as for a name that does not exist."""
    tool = _BY_NAME.get(name)
    return tool if tool is not None and tool in tools_for(caller) else None
