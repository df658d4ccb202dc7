"""The shapes every MCP tool shares: who is calling, argument and output models, the tool record."""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from brain.callers import BUILD, PERSON, QUESTION, SCOPE_CORPUS_READ, SCOPE_MEMORY, Caller

__all__ = ["BUILD", "PERSON", "QUESTION", "SCOPE_CORPUS_READ", "SCOPE_MEMORY", "Args", "Caller", "Out", "Tool"]

DESTRUCTIVE = frozenset({"forget"})  # tools that delete for good


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Out(BaseModel):
    pass


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_model: type[Args]
    output_model: type[Out]
    handler: Callable[[Caller, Any], Out]
    read_only: bool = True
    # The rate window it counts in (settings.BRAIN_MCP_RATE_LIMITS): read | search | write | ask.
    # A tool that writes is never "read" (tests/mcp_api/test_tool_rates.py): 600 a minute let a
    # build agent store 600 one-megabyte captures a minute.
    rate_class: str = "read"
    kinds: frozenset[str] = frozenset({PERSON, BUILD})
    scopes: frozenset[str] = field(default_factory=lambda: frozenset({SCOPE_CORPUS_READ}))
    # The text copy in ``content``: JSON of the structured result unless the tool renders its own.
    render: Callable[[Any], str] | None = None

    def describe(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it (a fresh copy: building the schemas took ~25 ms a tool)."""
        return copy.deepcopy(_described(self))


@functools.cache
def _described(tool: Tool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_model.model_json_schema(),
        "outputSchema": tool.output_model.model_json_schema(),
        "annotations": {
            "readOnlyHint": tool.read_only,
            "destructiveHint": tool.name in DESTRUCTIVE,
            "openWorldHint": False,
        },
    }


# When the request's waiting must end (a monotonic time), or None: a JSON-RPC batch shares one
# budget, so twenty ``await_answer`` calls cannot hold a web thread twenty times 25 s.
wait_deadline: ContextVar[float | None] = ContextVar("wait_deadline", default=None)
BATCH_WAIT_SECONDS = 25.0


def wait_allowed(seconds: float) -> float:
    """``seconds``, cut to what is left of the request's waiting budget."""
    deadline = wait_deadline.get()
    if deadline is None:
        return seconds
    return max(0.0, min(seconds, deadline - time.monotonic()))
