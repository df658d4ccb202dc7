"""The OpenAPI 3.1 document of REST v1 (drf-spectacular), drawn from the same pydantic models
as the MCP tool schemas, with each endpoint's credential kinds, scope and errors."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from pydantic import BaseModel, create_model

from api.examples import EXAMPLES
from brain.callers import SURFACES


class ErrorDetail(BaseModel):
    code: str
    message: str
    request_id: str


class FieldProblem(BaseModel):
    field: str
    message: str


class ErrorOut(BaseModel):
    """Every error: a stable code, a message safe to show, and the request id to quote."""

    error: ErrorDetail
    fields: list[FieldProblem] | None = None


ERRORS = {
    400: "The arguments are invalid (``fields`` names each problem).",
    401: "No credential, or one that is unknown, expired or revoked.",
    403: "The credential's kind or scope does not reach this endpoint, or the service refused the action.",
    404: "Not found — or not visible to you: the two are indistinguishable.",
    405: "The method is not one this path answers (``Allow`` lists those it does).",
    406: "The ``Accept`` header asks for a type other than JSON.",
    429: "Over your rate window; ``Retry-After`` says when to come back.",
    503: "The database or the embedding service is not answering; send it again after ``Retry-After``.",
}
# A request with a body may be over the size limit (before any view reads it).
BODY_ERRORS = {
    413: "The request body is over the limit (``payload_too_large``).",
    415: "The body's ``Content-Type`` is not the one this endpoint reads.",
}

# What a query parameter's published schema keeps of its pydantic field: the bounds the server
# checks. Only the type was kept, so values the document allowed (k=51, topK=21) were a 400.
_KEPT = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
         "pattern", "enum", "format", "items", "default")  # fmt: skip


def _parameter_schema(schema: dict[str, Any], definitions: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(OpenAPI schema, many) of a pydantic property as a query parameter: its one non-null
    form (``X | None`` is "may be left out" here), an enum's ``$ref`` resolved, bounds kept."""
    options = [option for option in schema.get("anyOf") or [schema] if option.get("type") != "null"]
    option = dict(options[0]) if len(options) == 1 else {"type": "string"}
    reference = option.pop("$ref", None)
    if reference is not None:
        option = {**definitions.get(reference.rsplit("/", 1)[-1], {}), **option}
    if "const" in option:
        option["enum"] = [option["const"]]
    kept: dict[str, Any] = {key: option[key] for key in _KEPT if key in option}
    if "default" in schema and schema["default"] is not None:
        kept["default"] = schema["default"]
    kept.setdefault("type", "string")
    if kept["type"] == "array":
        items: dict[str, Any] = kept.get("items", {})
        return {key: items[key] for key in _KEPT if key in items} or {"type": "string"}, True
    return kept, False


class ToolSchema(AutoSchema):
    """Request, response, parameters and errors of a REST v1 endpoint from its pydantic models."""

    def _operation(self) -> Any:
        operations = getattr(self.view, "operations", None)
        return operations.get(self.method) if operations else None

    def get_description(self) -> str:  # type: ignore[override]  # drf-spectacular's signature, not DRF's
        operation = self._operation()
        text = operation.definition.description if operation else (self.view.__doc__ or "").strip()
        surface = SURFACES[self._surface()]
        kinds = ", ".join(sorted(surface.kinds))
        scope = f" with the scope `{surface.scope}`" if surface.scope else ""
        view: Any = self.view
        return f"{text}\n\nCredentials: {kinds}{scope}. Rate class: `{view.rate_class_for(self.method)}`."

    def _surface(self) -> str:
        operation = self._operation()
        view: Any = self.view
        return operation.surface if operation else str(view.surface)

    def get_tags(self) -> list[str]:
        return [self.path.removeprefix("/api/v1/").split("/")[0] or "api"]

    def get_request_serializer(self) -> Any:
        if self.method not in ("POST", "PATCH", "PUT"):
            return None
        operation = self._operation()
        if operation is not None:
            return _body_model(operation.definition.input_model, self.path)
        # A body that is not JSON (a multipart upload, JSON lines): its media type → its schema.
        return getattr(self.view, "request_body", None) or getattr(self.view, "request_model", None)

    def get_examples(self) -> list[Any]:
        example = EXAMPLES.get(self.get_operation_id(), {})
        found: list[Any] = []
        if "request" in example and self.method in ("POST", "PATCH", "PUT"):
            found.append(OpenApiExample("request", value=example["request"], request_only=True))
        if "response" in example:
            operation = self._operation()
            status = str(operation.status) if operation is not None else "200"
            found.append(OpenApiExample("answer", value=example["response"], response_only=True, status_codes=[status]))
        return found

    def get_response_serializers(self) -> Any:
        operation = self._operation()
        if operation is not None:
            responses: dict[int, Any] = {operation.status: operation.definition.output_model}
        else:
            responses = dict(getattr(self.view, "response_models", {}))
        errors = dict(ERRORS)
        if self.method in ("POST", "PATCH", "PUT"):
            errors.update(BODY_ERRORS)
        # What only some endpoints answer (an upload: 507 when the storage is full).
        errors.update(getattr(self.view, "extra_errors", {}))
        for status, description in sorted(errors.items()):
            responses.setdefault(status, OpenApiResponse(response=ErrorOut, description=description))
        return responses

    def get_operation_id(self) -> str:
        operation = self._operation()
        if operation is not None:
            return str(operation.tool)
        return str(getattr(self.view, "operation_id", None) or super().get_operation_id())

    def get_override_parameters(self) -> list[Any]:
        filterset = getattr(self.view, "filterset_class", None)
        if filterset is not None and self.method == "GET":
            return self._list_parameters(filterset)
        operation = self._operation()
        if operation is None:
            return list(getattr(self.view, "query_parameters", []))
        if self.method not in ("GET", "DELETE"):
            return []
        model = operation.definition.input_model
        json_schema = model.model_json_schema()
        properties, definitions = json_schema.get("properties", {}), json_schema.get("$defs", {})
        in_path = set(self.view.kwargs.keys()) if getattr(self.view, "kwargs", None) else set()
        parameters: list[Any] = []
        for name, field in model.model_fields.items():
            if name in in_path or f"{{{name}}}" in self.path:
                continue
            kind, many = _parameter_schema(properties.get(name, {}), definitions)
            parameters.append(
                OpenApiParameter(
                    name=name, type=kind, many=many, required=field.is_required(),
                    location=OpenApiParameter.QUERY, description=field.description or "",
                )
            )  # fmt: skip
        return parameters

    @staticmethod
    def _list_parameters(filterset: Any) -> list[Any]:
        """A cursor list's filters (django-filter), its cursor and its page size."""
        parameters: list[Any] = [
            OpenApiParameter(name, type=OpenApiTypes.STR, location=OpenApiParameter.QUERY,
                             description=str(getattr(field, "extra", {}).get("help_text") or ""),
                             enum=[value for value, _ in field.extra["choices"]] if "choices" in field.extra else None)
            for name, field in filterset.base_filters.items()
        ]  # fmt: skip
        cursor = "Opaque: taken from the `next` or `previous` link of a page"
        parameters.append(OpenApiParameter("cursor", OpenApiTypes.STR, OpenApiParameter.QUERY, description=cursor))
        size = "Page size, 1 to 200 (default 20)"
        limit = {"type": "integer", "minimum": 1, "maximum": 200, "default": 20}
        parameters.append(OpenApiParameter("limit", limit, OpenApiParameter.QUERY, description=size))
        return parameters


_BODIES: dict[tuple[type[BaseModel], tuple[str, ...]], type[BaseModel]] = {}


def _body_model(model: type[BaseModel], path: str) -> type[BaseModel]:
    """``model`` without the fields the path already carries (``/memories/{id}`` takes no ``id``
    in its body): the body a client sends, not the tool's whole argument list."""
    in_path = tuple(name for name in model.model_fields if f"{{{name}}}" in path)
    if not in_path:
        return model
    key = (model, in_path)
    if key not in _BODIES:
        fields: dict[str, Any] = {
            name: (field.annotation, field) for name, field in model.model_fields.items() if name not in in_path
        }
        _BODIES[key] = create_model(f"{model.__name__}Body", __config__=model.model_config, **fields)
    return _BODIES[key]


class BearerScheme(OpenApiAuthenticationExtension):  # type: ignore[misc,no-untyped-call]
    target_class = "api.auth.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An OAuth 2.1 access token bound to the resource /api/v1, a personal API token (bmt_…), "
                "a question credential (bqc_…) or a build credential (bld_…). Each endpoint says which kinds "
                "and scope it accepts."
            ),
        }


class SessionScheme(OpenApiAuthenticationExtension):  # type: ignore[misc,no-untyped-call]
    target_class = "api.auth.SessionCallerAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "apiKey", "in": "cookie", "name": "sessionid",
                "description": "A signed-in browser; unsafe methods need the CSRF token."}  # fmt: skip


def only_v1(endpoints: list[tuple[str, str, str, Any]], **kwargs: Any) -> list[tuple[str, str, str, Any]]:
    """The document covers REST v1 only (not the schema and docs views themselves)."""
    return [
        endpoint
        for endpoint in endpoints
        if endpoint[0].startswith("/api/v1/") and not endpoint[0].startswith(("/api/v1/schema", "/api/v1/docs"))
    ]
