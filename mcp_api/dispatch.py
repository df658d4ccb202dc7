"""One JSON-RPC 2.0 dispatcher for every MCP entry point.

Stateless: each message is complete; ``tools/call`` works without ``initialize``.
Returns ``None`` for notifications (the view answers 202). Errors never carry a stack,
SQL, a file path or an internal id — the request id travels in the HTTP header and in
the error's ``data``.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from typing import Any

from pydantic import ValidationError as ArgsInvalid

import brain
from brain import ratelimit
from brain.domain import problem_for
from brain.errors import argument_problems, shown
from brain.inputs import InputRefused, refuse_unstorable
from brain.request_context import get_request_id
from brain.text.secrets import redact
from mcp_api.base import Args, Caller, Tool
from mcp_api.tools import tool_for, tools_for

logger = logging.getLogger(__name__)

SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
DEFAULT_VERSION = "2025-06-18"
PAGE_SIZE = 50

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


def error(message_id: Any, code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "code": code,
        "message": redact(message),
        "data": {"request_id": get_request_id(), **(data or {})},
    }
    return {"jsonrpc": "2.0", "id": message_id, "error": body}


def _result(message_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "result": result}


def _valid_id(value: Any) -> bool:
    """MCP request ids are strings or numbers (never null, a boolean, an object or a list)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int)


def echo_id(message: Any) -> Any:
    """The id an error answer carries: the request's when it is a valid id, else null (an
    object or a list sent as the id is never echoed back)."""
    message_id = message.get("id") if isinstance(message, dict) else None
    return message_id if _valid_id(message_id) else None


def is_response(message: Any) -> bool:
    """Whether ``message`` is a JSON-RPC response (a ``result`` or an ``error`` for an id)."""
    return (
        isinstance(message, dict) and message.get("jsonrpc") == "2.0" and "method" not in message
        and "id" in message and ("result" in message) != ("error" in message)
    )  # fmt: skip


def dispatch(message: Any, caller: Caller, version: str) -> dict[str, Any] | None:
    """Answer one JSON-RPC message for ``caller``; None for a notification or a response.

    A response a client posts is accepted and ignored (MCP 2025-06-18, Streamable HTTP,
    "Sending Messages to the Server": 202, no body): this server sends no requests, so it
    answers none. It was answered as an invalid request carrying its id — an answer the
    client had no request pending for."""
    if is_response(message):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return error(echo_id(message), INVALID_REQUEST, "Invalid JSON-RPC 2.0 request")
    method: str = message["method"]
    if "id" not in message:
        return None  # notifications (initialized, cancelled, …) need no answer
    message_id = message["id"]
    if not _valid_id(message_id):
        return error(None, INVALID_REQUEST, "Invalid Request: id must be a string or a number")
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return error(message_id, INVALID_PARAMS, "params must be an object")
    try:
        refuse_unstorable(params, "params")
    except InputRefused as refused:
        return error(message_id, INVALID_PARAMS, f"Invalid params: {refused}")
    # Every method counts in a window (tools/call in its tool's class, inside _tools_call): an
    # uncounted tools/list rebuilt the whole catalogue as often as the caller liked.
    if method != "tools/call":
        ratelimit.hit(principal_key=caller.rate_key, rate_class="read")
    if method == "initialize":
        requested = params.get("protocolVersion")
        return _result(
            message_id,
            {
                "protocolVersion": requested if requested in SUPPORTED_VERSIONS else version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "brain", "version": brain.__version__},
                "instructions": "Brain: the organisation's governed corpus. Reads run under your own grants.",
            },
        )
    if method == "ping":
        return _result(message_id, {})
    if method == "tools/list":
        return _tools_list(message_id, params, caller)
    if method == "tools/call":
        return _tools_call(message_id, params, caller)
    return error(message_id, METHOD_NOT_FOUND, f"Method not found: {shown(method)}")


def _tools_list(message_id: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
    tools = tools_for(caller)
    start = 0
    cursor = params.get("cursor")
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
        except (ValueError, UnicodeDecodeError):
            return error(message_id, INVALID_PARAMS, "Invalid cursor")
        if not 0 <= start < len(tools):
            return error(message_id, INVALID_PARAMS, "Invalid cursor")
    page = tools[start : start + PAGE_SIZE]
    result: dict[str, Any] = {"tools": [tool.describe() for tool in page]}
    if start + PAGE_SIZE < len(tools):
        result["nextCursor"] = base64.urlsafe_b64encode(str(start + PAGE_SIZE).encode()).decode()
    return _result(message_id, result)


def _tool_error(message_id: Any, text: str) -> dict[str, Any]:
    """A failed call's result; redacted like ``error``'s message (an argument's *name* may be a
    pasted key: ``{"AKIA…": 1}`` was echoed as "AKIA…: Extra inputs are not permitted")."""
    return _result(message_id, {"content": [{"type": "text", "text": redact(text)}], "isError": True})


def tool_arguments(tool: Tool, arguments: Any) -> Args:
    """``arguments`` as ``tool``'s input model, or ``ArgsInvalid`` naming each wrong field.

    Strict, as JSON: an argument is the type its inputSchema says (lax validation took
    ``true`` for an integer and ``"5"`` for 5, contrary to the schema every client reads);
    JSON's own forms — a date as ISO text — still pass."""
    return tool.input_model.model_validate_json(json.dumps(arguments), strict=True)


def _tools_call(message_id: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        return error(message_id, INVALID_PARAMS, "params.name must be a string: the name of a tool from tools/list")
    tool = tool_for(caller, name)
    if tool is None:
        # A tool the caller may not use is answered exactly like one that does not exist. Such
        # calls count in the read window too, and the name is echoed short: a megabyte of name
        # was sent back whole, through the secret detector, as often as the caller liked.
        ratelimit.hit(principal_key=caller.rate_key, rate_class="read")
        return error(message_id, INVALID_PARAMS, f"Unknown tool: {shown(name)}")
    ratelimit.hit(principal_key=caller.rate_key, rate_class=tool.rate_class)  # raises RateLimited → 429
    # Left out (or null): no arguments. Anything else must be an object: `false`, 0 or "" were
    # taken as {} — a client's bug answered as if it had asked for the defaults.
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    try:
        args = tool_arguments(tool, arguments)
    except ArgsInvalid as invalid:
        problems = "; ".join(f"{where}: {what}" for where, what in argument_problems(invalid))
        return _tool_error(message_id, f"Invalid arguments: {problems}")
    try:
        output = tool.handler(caller, args)
    except ratelimit.RateLimited:
        raise  # the view answers HTTP 429 with Retry-After
    except Exception as failure:
        problem = problem_for(failure)  # the one mapping every transport uses
        if problem is not None and problem.status == 503:
            raise  # not this call's fault: the view answers HTTP 503 with Retry-After, not a tool error
        if problem is None:
            logger.exception("tool %s failed", tool.name)
            return error(message_id, INTERNAL_ERROR, "Internal error; quote the request id.")
        return _tool_error(message_id, problem.message)
    structured = output.model_dump(mode="json")
    text = tool.render(output) if tool.render is not None else json.dumps(structured, ensure_ascii=False)
    return _result(
        message_id,
        {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        },
    )
