"""The shapes every MCP tool shares: who is calling, argument and output models, the tool record."""

from __future__ import annotations

from collections.abc import Callable
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
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_model.model_json_schema(),
            "outputSchema": self.output_model.model_json_schema(),
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": self.name in DESTRUCTIVE,
                "openWorldHint": False,
            },
        }
