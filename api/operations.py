"""REST v1 endpoints that are MCP tools over HTTP: one implementation, two transports.

Each view names, per HTTP method, the tool of the MCP catalogue it runs and the surface
(``brain.callers.SURFACES``) that must admit the caller. Arguments are the tool's own
pydantic model, filled from the path, then the query string (GET, DELETE) or the JSON
body (POST, PATCH); the answer is the tool's own output model. So the REST schema, the MCP
``inputSchema``/``outputSchema`` and the validation are one definition per entity.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel
from pydantic import ValidationError as ArgsInvalid
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import BearerAuthentication, RateWindowThrottle, SessionCallerAuthentication, SurfacePermission
from brain.callers import Caller
from brain.errors import argument_problems, error_body, unknown_parameters
from mcp_api.tools import CATALOGUE, Tool

TOOLS = {tool.name: tool for tool in CATALOGUE}


@dataclass(frozen=True)
class Operation:
    """One HTTP method of one endpoint: the tool it runs and the surface that guards it."""

    tool: str
    surface: str
    status: int = 200

    @property
    def definition(self) -> Tool:
        return TOOLS[self.tool]


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is list:
        return True
    return any(typing.get_origin(arg) is list for arg in typing.get_args(annotation))


def query_arguments(request: Request, model: type[BaseModel]) -> tuple[dict[str, Any], list[str]]:
    """The model's fields found in the query string (lists from repeated parameters), and
    the names of parameters the model does not have (refused: a typo must not pass silently)."""
    found: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if name not in request.query_params:
            continue
        values = request.query_params.getlist(name)
        found[name] = values if _is_list(field.annotation) else values[-1]
    return found, sorted(set(request.query_params) - set(model.model_fields))


def invalid_arguments(invalid: ArgsInvalid) -> Response:
    # Field names are the client's keys: bounded and redacted, and an unknown one named only when
    # it reads as a mistyped name of ours (``brain.errors.argument_problems``).
    problems = [{"field": where, "message": what} for where, what in argument_problems(invalid, whole="body")]
    summary = "; ".join(f"{problem['field']}: {problem['message']}" for problem in problems)
    return Response({**error_body("invalid", f"Invalid arguments: {summary}"), "fields": problems}, status=400)


class ToolView(APIView):
    """An endpoint whose methods run MCP tools (see the module docstring)."""

    operations: ClassVar[dict[str, Operation]] = {}
    authentication_classes = [BearerAuthentication, SessionCallerAuthentication]
    permission_classes = [SurfacePermission]
    throttle_classes = [RateWindowThrottle]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        methods = [method.lower() for method in cls.operations]
        cls.http_method_names = [*methods, *(["head"] if "get" in methods else []), "options"]

    def operation(self, method: str | None) -> Operation:
        """The operation of ``method``; OPTIONS is guarded like the endpoint's first method; any
        other method the endpoint does not have is a 405 (DRF asks for the surface first)."""
        wanted = "GET" if method == "HEAD" else str(method)
        if wanted == "OPTIONS":
            return next(iter(self.operations.values()))
        if wanted not in self.operations:
            raise MethodNotAllowed(wanted)
        return self.operations[wanted]

    @property
    def surface(self) -> str:
        return self.operation(self.request.method).surface

    def rate_class_for(self, method: str | None) -> str:
        return self.operation(method).definition.rate_class

    def caller_for_tool(self, caller: Caller, **kwargs: Any) -> Caller:
        """The caller the tool runs as (a build endpoint binds the build named in the path)."""
        return caller

    def run(self, request: Request, **kwargs: Any) -> Response:
        return run_operation(request, self.operation(request.method), kwargs, self.caller_for_tool)

    def get(self, request: Request, **kwargs: Any) -> Response:
        return self.run(request, **kwargs)

    def post(self, request: Request, **kwargs: Any) -> Response:
        return self.run(request, **kwargs)

    def patch(self, request: Request, **kwargs: Any) -> Response:
        return self.run(request, **kwargs)

    def delete(self, request: Request, **kwargs: Any) -> Response:
        return self.run(request, **kwargs)


def run_operation(request: Request, operation: Operation, kwargs: dict[str, Any], bind: Any = None) -> Response:
    """Run ``operation``'s tool for the request's caller: arguments from the path, then the query
    string (GET, HEAD, DELETE) or the JSON body; the tool's output model as the answer."""
    tool = operation.definition
    if request.method in ("GET", "HEAD", "DELETE"):
        data, unknown = query_arguments(request, tool.input_model)
        if unknown:
            return Response(error_body("invalid", unknown_parameters(unknown)), status=400)
    else:
        body = request.data
        if not isinstance(body, dict):
            return Response(error_body("invalid", "The body must be a JSON object."), status=400)
        data = dict(body)
    data.update({key: value for key, value in kwargs.items() if key in tool.input_model.model_fields})
    try:
        arguments = tool.input_model.model_validate(data)
    except ArgsInvalid as invalid:
        return invalid_arguments(invalid)
    assert isinstance(request.auth, Caller)  # SurfacePermission
    caller = bind(request.auth, **kwargs) if bind is not None else request.auth
    output = tool.handler(caller, arguments)
    return Response(output.model_dump(mode="json"), status=operation.status)
