"""The MCP endpoint: one JSON-RPC dispatcher over one tool catalogue."""
