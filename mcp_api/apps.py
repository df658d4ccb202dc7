from __future__ import annotations

from django.apps import AppConfig


class McpApiConfig(AppConfig):
    """The MCP endpoint: one JSON-RPC dispatcher over one tool catalogue."""

    name = "mcp_api"
    verbose_name = "MCP"
