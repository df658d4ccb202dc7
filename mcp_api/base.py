"""The shapes every MCP tool shares: who is calling, argument and output models, the tool record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from builds.models import Build
from grants.principals import Principal

PERSON = "person"
BUILD = "build"
QUESTION = "question"  # a question credential: ask and await_answer only
SCOPE_CORPUS_READ = "corpus:read"
SCOPE_MEMORY = "memory"
DESTRUCTIVE = frozenset({"forget"})  # tools that delete for good


@dataclass(frozen=True)
class Caller:
    """Who is calling: their principal, credential kind, scopes, and (for builds) the bound build."""

    principal: Principal
    kind: str
    scopes: frozenset[str] = frozenset()
    build: Build | None = None

    @property
    def rate_key(self) -> str:
        """Rate windows are per principal: every credential of one person shares them."""
        return f"{type(self.principal).__name__.lower()}:{getattr(self.principal, 'pk', 'system')}"


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
    rate_class: str = "read"  # read | search | ask
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
