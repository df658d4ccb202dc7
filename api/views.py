"""REST v1 endpoints. Most are MCP tools over HTTP (``api.operations``); the rest are here."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404
from pydantic import BaseModel, Field
from pydantic import ValidationError as ArgsInvalid
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import BearerAuthentication, RateWindowThrottle, SessionCallerAuthentication, SurfacePermission
from api.operations import Operation, ToolView, invalid_arguments
from brain.callers import BUILD, Caller
from builds.models import Build
from builds.services import build_credential_issue, build_open
from grants.models import Member


def _op(tool: str, surface: str, status: int = 200) -> Operation:
    return Operation(tool=tool, surface=surface, status=status)


# --------------------------------------------------------------------------- the corpus


class Pages(ToolView):
    """Live pages you can read, by path prefix, title words, type or category."""

    operations = {"GET": _op("find_page", "pages.read")}


class Page(ToolView):
    """One live page: frontmatter and Markdown body."""

    operations = {"GET": _op("read_page", "pages.read")}


class PageRelationships(ToolView):
    operations = {"GET": _op("page_relationships", "pages.read")}


class Search(ToolView):
    """Hybrid semantic + keyword search over the pages you can read."""

    operations = {"GET": _op("search", "search")}


class Figure(ToolView):
    operations = {"GET": _op("read_figure", "figures.read")}


class Sources(ToolView):
    operations = {"GET": _op("list_sources", "sources.read")}


class SourceSearch(ToolView):
    operations = {"GET": _op("search_sources", "sources.read")}


class Source(ToolView):
    operations = {"GET": _op("read_source", "sources.read")}


class SourceTags(ToolView):
    operations = {"POST": _op("tag_source", "sources.write")}


# --------------------------------------------------------------------------- memory


class Memories(ToolView):
    operations = {"GET": _op("list_recent", "memory"), "POST": _op("remember", "memory", 201)}


class MemoryRecall(ToolView):
    operations = {"GET": _op("recall", "memory")}


class MemoryEntry(ToolView):
    operations = {"GET": _op("get", "memory"), "PATCH": _op("update", "memory"), "DELETE": _op("forget", "memory")}


class MemoryAppend(ToolView):
    operations = {"POST": _op("append", "memory")}


class MemoryStatus(ToolView):
    operations = {"POST": _op("set_status", "memory")}


class MemoryShare(ToolView):
    operations = {"POST": _op("share", "memory")}


class MemoryConnections(ToolView):
    operations = {"GET": _op("connections", "memory")}


class MemoryLinks(ToolView):
    operations = {"POST": _op("link", "memory", 201), "DELETE": _op("unlink", "memory")}


class Workspaces(ToolView):
    """The shared teams (workspaces) you belong to: one per brain for now."""

    operations = {"GET": _op("list_teams", "team")}


# --------------------------------------------------------------------------- questions


class Questions(ToolView):
    """File a question; it is answered under your own grants (poll ``/questions/{id}``)."""

    operations = {"POST": _op("ask", "questions", 202)}


class QuestionAnswer(ToolView):
    operations = {"GET": _op("await_answer", "questions")}


# --------------------------------------------------------------------------- builds


class BuildView(ToolView):
    """An endpoint about the build named in the path: a build credential reaches only its own
    build; a person only builds they requested (anything else is 404, like a missing one)."""

    def caller_for_tool(self, caller: Caller, **kwargs: Any) -> Caller:
        build = _build_of(caller, str(kwargs.get("build_id", "")))
        return Caller(principal=caller.principal, kind=caller.kind, scopes=caller.scopes, build=build)


def _build_of(caller: Caller, public_id: str) -> Build:
    if caller.kind == BUILD:
        if caller.build is None or str(caller.build.public_id) != public_id:
            raise Http404("no such build")
        return caller.build
    try:
        wanted = uuid.UUID(public_id)
    except ValueError:
        raise Http404("no such build") from None
    principal = caller.principal
    build = (
        Build.objects.filter(public_id=wanted, requester=principal).first() if isinstance(principal, Member) else None
    )
    if build is None:
        raise Http404("no such build")
    return build


class BuildStatus(BuildView):
    operations = {"GET": _op("read_branch", "builds.own")}


class BuildDiff(BuildView):
    operations = {"GET": _op("diff_page", "builds.own")}


class BuildSubmit(BuildView):
    operations = {"POST": _op("submit_for_review", "builds.own")}


class OpenBuildArgs(BaseModel):
    title: str = Field(min_length=1, max_length=200, description="What the change is about")
    purpose: str = Field("", max_length=5000)


class OpenedBuild(BaseModel):
    id: str
    title: str
    status: str
    credential: str = Field(description="The build credential (bld_…): shown once, never again")
    credential_expires_at: str
    mcp_url: str = Field(description="Where an agent uses the credential to write drafts")


class Builds(APIView):
    """Open a change build and get its credential, shown once."""

    authentication_classes = [BearerAuthentication, SessionCallerAuthentication]
    permission_classes = [SurfacePermission]
    throttle_classes = [RateWindowThrottle]
    surface = "builds.write"
    operation_id = "open_build"
    request_model = OpenBuildArgs
    response_models = {201: OpenedBuild}

    def rate_class_for(self, method: str | None) -> str:
        return "write"

    def post(self, request: Request) -> Response:
        from django.conf import settings

        try:
            arguments = OpenBuildArgs.model_validate(request.data if isinstance(request.data, dict) else {})
        except ArgsInvalid as invalid:
            return invalid_arguments(invalid)
        caller = request.auth
        assert isinstance(caller, Caller)
        build = build_open(actor=caller.principal, title=arguments.title, purpose=arguments.purpose)
        credential, raw = build_credential_issue(actor=caller.principal, build=build)
        opened = OpenedBuild(
            id=str(build.public_id), title=build.title, status=build.status, credential=raw,
            credential_expires_at=credential.expires_at.isoformat(), mcp_url=settings.BRAIN_BASE_URL + "/api/build/mcp",
        )  # fmt: skip
        return Response(opened.model_dump(mode="json"), status=201)
