"""Every MCP tool counts in a rate window that fits what it does: the whole catalogue, so a new
tool is covered the day it is added."""

from __future__ import annotations

from django.conf import settings

from mcp_api.tools import CATALOGUE


def test_every_tool_that_writes_counts_in_a_write_window_not_the_read_one() -> None:
    reads_rated_writes = [tool.name for tool in CATALOGUE if not tool.read_only and tool.rate_class == "read"]
    assert reads_rated_writes == []


def test_every_rate_class_is_a_configured_window() -> None:
    windows = settings.BRAIN_MCP_RATE_LIMITS
    unknown = {tool.name: tool.rate_class for tool in CATALOGUE if tool.rate_class not in windows}
    assert unknown == {}
