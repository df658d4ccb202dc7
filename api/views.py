"""REST v1 endpoints. Most are MCP tools over HTTP (``api.operations``); the rest are here."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

from django.db import transaction
from django.http import Http404, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from pydantic import BaseModel, Field
from pydantic import ValidationError as ArgsInvalid
from rest_framework.exceptions import ParseError, Throttled
from rest_framework.parsers import BaseParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import BearerAuthentication, RateWindowThrottle, SessionCallerAuthentication, SurfacePermission
from api.operations import Operation, ToolView, invalid_arguments
from brain.callers import BUILD, Caller
from brain.errors import error_body, unknown_parameters
from builds.models import Build
from builds.services import build_credential_issue, build_open
from grants.models import Member


class PlainTextLinesParser(BaseParser):
    """JSON lines arrive as they are; ``memory.api.import_records`` checks each line."""

    media_type = "application/x-ndjson"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return {}  # the view reads ``request.body`` itself, line by line


def _op(tool: str, surface: str, status: int = 200) -> Operation:
    return Operation(tool=tool, surface=surface, status=status)


# --------------------------------------------------------------------------- the corpus


class Page(ToolView):
    """One live page: frontmatter and Markdown body."""

    operations = {"GET": _op("read_page", "pages.read")}


class PageRelationships(ToolView):
    operations = {"GET": _op("page_relationships", "pages.read")}


class PlainView(APIView):
    """A REST v1 endpoint that is not an MCP tool: its surface, rate class and models by hand."""

    authentication_classes = [BearerAuthentication, SessionCallerAuthentication]
    permission_classes = [SurfacePermission]
    throttle_classes = [RateWindowThrottle]
    surface = ""
    rate_class = "read"
    operation_id = ""
    request_model: type[BaseModel] | None = None
    response_models: dict[int, Any] = {}
    query_parameters: list[OpenApiParameter] = []  # documented in the OpenAPI schema

    def rate_class_for(self, method: str | None) -> str:
        return self.rate_class

    def known_query_parameters(self) -> set[str]:
        """The query parameters this endpoint reads (the ones its OpenAPI operation documents)."""
        return {str(parameter.name) for parameter in self.query_parameters}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """After authentication, permission and throttling: an unknown query parameter is a 400
        naming it, as on every tool-backed endpoint (``?prefx=`` listed everything; ``?original=``
        exported without the originals asked for)."""
        super().initial(request, *args, **kwargs)
        if request.method in ("GET", "HEAD", "DELETE"):
            # "format" is DRF's own (?format=json picks a renderer); empty, DRF ignored it.
            if "format" in request.query_params and not request.query_params["format"].strip():
                raise ParseError("format: name a format, or leave the parameter out.", code="invalid")
            unknown = sorted(set(request.query_params) - self.known_query_parameters() - {"format"})
            if unknown:
                raise ParseError(unknown_parameters(unknown), code="invalid")

    def unacceptable(self, request: Request, media_type: str) -> Response | None:
        """A 406 when the client's ``Accept`` header lists neither ``media_type`` nor a wildcard
        that covers it. For the endpoints that stream one kind of file but list JSON first (to
        answer their errors in JSON): ``Accept: application/json`` was answered with the file."""
        if not request.META.get("HTTP_ACCEPT", "").strip() or request._request.accepts(media_type):
            return None  # no preference (an empty header too), or one that covers it
        return Response(error_body("not_acceptable", f"This endpoint sends {media_type}."), status=406)

    def member(self, request: Request) -> Member:
        caller = request.auth
        assert isinstance(caller, Caller)  # SurfacePermission
        if not isinstance(caller.principal, Member):
            raise PermissionError("memories and uploads belong to people")
        return caller.principal


class RevisionOut(BaseModel):
    number: int = Field(description="Names the revision (a revert repeats a hash, never a number)")
    path: str = Field(description="Where it was approved: the page's path, or an earlier one before a move")
    revision_sha256: str = Field(
        description="The revision's hash as you read it: of the whole text, or of what you are shown when"
        " a citation or related page is left out for you"
    )
    promoted_by: str
    promoted_at: str
    build_id: str | None = Field(description="The build that carried it, when you may see that build")
    build_title: str | None
    note: str


class HistoryOut(BaseModel):
    path: str
    revisions: list[RevisionOut]


class PageHistory(PlainView):
    """Every promoted revision of a page you can read, newest first: who approved it, when, at
    which path (a moved page's history includes its earlier paths'), which build carried it and
    the approval note (a build's title and note only when you may see it)."""

    surface = "pages.read"
    operation_id = "page_history"
    response_models = {200: HistoryOut}

    def get(self, request: Request, path: str) -> Response:
        from builds.history import page_history

        caller = request.auth
        assert isinstance(caller, Caller)
        page, entries = page_history(principal=caller.principal, path=path)
        history = HistoryOut(
            path=page.path,
            revisions=[
                RevisionOut(number=entry.number, path=entry.revision.path, revision_sha256=entry.sha256,
                            promoted_by=entry.promoted_by,
                            promoted_at=entry.promoted_at.isoformat(), build_id=entry.build_id,
                            build_title=entry.build_title, note=entry.note)
                for entry in entries
            ],
        )  # fmt: skip
        return Response(history.model_dump())


class Search(ToolView):
    """Hybrid semantic + keyword search over the pages you can read."""

    operations = {"GET": _op("search", "search")}


class Figure(ToolView):
    operations = {"GET": _op("read_figure", "figures.read")}


class SourceSearch(ToolView):
    operations = {"GET": _op("search_sources", "sources.read")}


class Source(ToolView):
    operations = {"GET": _op("read_source", "sources.read")}


class SourceTags(ToolView):
    operations = {"POST": _op("tag_source", "sources.write")}


# --------------------------------------------------------------------------- memory


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


class ImportStarted(BaseModel):
    id: str
    title: str
    status: str
    files: int = Field(description="The pages it changes (files the same as their live page are left out)")
    status_url: str


class BuildImport(PlainView):
    """Propose a zip of Markdown pages (``archive``, ``title``) as one import build for review.

    Every file is validated first (paths, frontmatter, secrets, your ``suggest``); any failure
    refuses the whole archive and names each file and rule. The build then drafts in the
    background and waits for a person's approval, like any other.
    """

    surface = "builds.write"
    rate_class = "upload"
    operation_id = "import_build"
    parser_classes = [MultiPartParser]
    request_body: ClassVar[dict[str, Any]] = {
        "multipart/form-data": {
            "type": "object",
            "properties": {
                "archive": {"type": "string", "format": "binary", "description": "A zip of Markdown pages"},
                "title": {"type": "string", "description": "The build's title"},
            },
            "required": ["archive"],
        }
    }
    response_models = {202: ImportStarted}

    def post(self, request: Request) -> Response:
        from builds.driver import files_from_zip, import_job_create
        from builds.models import BuildJobItem

        archive = request.FILES.get("archive")
        if archive is None:
            return Response(error_body("invalid", "archive: attach a .zip of Markdown pages"), status=400)
        fields = request.data if isinstance(request.data, dict) else {}
        title = str(fields.get("title") or "Import")[:200]
        files = files_from_zip(archive)
        build = import_job_create(requester=self.member(request), files=files, title=title)
        # The pages it changes (an export's README, captures and unchanged pages are not drafted).
        changed = BuildJobItem.objects.filter(job__build=build).count()
        started = ImportStarted(id=str(build.public_id), title=build.title, status=build.status, files=changed,
                                status_url=f"/api/v1/builds/{build.public_id}")  # fmt: skip
        return Response(started.model_dump(), status=202)


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


class Builds(PlainView):
    """Open a change build and get its credential, shown once."""

    surface = "builds.write"
    rate_class = "write"
    operation_id = "open_build"
    request_model = OpenBuildArgs
    response_models = {201: OpenedBuild}

    def post(self, request: Request) -> Response:
        from django.conf import settings

        try:
            arguments = OpenBuildArgs.model_validate(request.data if isinstance(request.data, dict) else {})
        except ArgsInvalid as invalid:
            return invalid_arguments(invalid)
        caller = request.auth
        assert isinstance(caller, Caller)
        # One transaction: a credential refused or lost left an open build nobody could write to.
        with transaction.atomic():
            build = build_open(actor=caller.principal, title=arguments.title, purpose=arguments.purpose)
            credential, raw = build_credential_issue(actor=caller.principal, build=build)
        opened = OpenedBuild(
            id=str(build.public_id), title=build.title, status=build.status, credential=raw,
            credential_expires_at=credential.expires_at.isoformat(), mcp_url=settings.BRAIN_BASE_URL + "/api/build/mcp",
        )  # fmt: skip
        return Response(opened.model_dump(mode="json"), status=201)


# --------------------------------------------------------------------------- beyond the tools


class CountOut(BaseModel):
    count: int


class MemoryCount(PlainView):
    """How many memories you can see (optionally in one workspace)."""

    surface = "memory"
    operation_id = "count_memories"
    response_models = {200: CountOut}
    query_parameters = [
        OpenApiParameter("workspace", OpenApiTypes.STR, OpenApiParameter.QUERY, enum=["personal", "company"],
                         description="Only this layer: personal or company (the team layer)"),
    ]  # fmt: skip

    def get(self, request: Request) -> Response:
        from memory.models import Memory

        visible = Memory.objects.visible_to(self.member(request))
        workspace = request.query_params.get("workspace")
        if workspace is not None:  # "?workspace=" is a mistake, not "every workspace"
            if workspace not in ("personal", "company"):
                return Response(error_body("invalid", "workspace must be personal or company"), status=400)
            visible = visible.filter(workspace=workspace)
        return Response(CountOut(count=visible.count()).model_dump())


class StatsOut(BaseModel):
    total: int
    workspace: dict[str, int]
    status: dict[str, int]
    kind: dict[str, int]
    top_tags: dict[str, int]


class MemoryStats(PlainView):
    """Counts of the memories you can see, by workspace, status and kind, and the top tags."""

    surface = "memory"
    operation_id = "memory_stats"
    response_models = {200: StatsOut}

    def get(self, request: Request) -> Response:
        from memory.recall import memory_stats

        return Response(StatsOut(**memory_stats(self.member(request))).model_dump())


class JsonLinesRenderer(JSONRenderer):
    """Declares ``application/x-ndjson`` for a streamed export (its errors are still plain JSON)."""

    media_type = "application/x-ndjson"
    format = "jsonl"


class MemoryExport(PlainView):
    """Everything you wrote (both layers) as JSON lines, streamed oldest first."""

    renderer_classes = [JSONRenderer, JsonLinesRenderer]
    surface = "memory"
    operation_id = "export_memories"
    response_models = {200: OpenApiResponse(response=OpenApiTypes.STR, description="JSON lines, one memory each")}

    def get(self, request: Request) -> StreamingHttpResponse | Response:
        from memory.api import export_count, export_lines

        refused = self.unacceptable(request, "application/x-ndjson")
        if refused is not None:
            return refused
        member = self.member(request)
        response = StreamingHttpResponse(export_lines(member), content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="brain-memories.jsonl"'
        # How many lines it begins to send: a client can tell a stream cut between two lines
        # (a server ends a failed stream by closing the connection) from a whole one.
        response["X-Brain-Export-Memories"] = str(export_count(member))
        return response


class ImportLine(BaseModel):
    line: int
    outcome: str
    id: str | None = None
    error: str | None = None


class ImportOut(BaseModel):
    results: list[ImportLine]


class MemoryImport(PlainView):
    """Capture up to 500 JSON lines (``{"content": …}`` a line); all are checked before any is stored."""

    surface = "memory"
    rate_class = "upload"
    operation_id = "import_memories"
    parser_classes = [PlainTextLinesParser]
    request_body: ClassVar[dict[str, Any]] = {
        "application/x-ndjson": {
            "type": "array",
            "description": "Up to 500 lines, each one JSON object (a memory): content, and tags, workspace, "
            "status, source, importance, kind, volatility as for capturing one",
            "maxItems": 500,
            "items": {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]},
        }
    }
    response_models = {200: ImportOut}

    def post(self, request: Request) -> Response:
        from memory.api import import_records

        body = request.body
        request.data  # noqa: B018 — the parser negotiation: a body that is not JSON lines is a 415
        status, answer = import_records(self.member(request), body)
        if status == 429:
            raise Throttled(wait=answer["retry_after"])
        return Response(answer, status=status)


class UploadOut(BaseModel):
    key: str
    citation: str
    status_url: str
    extraction: dict[str, Any]
    # These exact bytes were uploaded before: this is that capture (its title and category as
    # they were; nothing new was stored or extracted).
    existing: bool = False


class SourceUpload(PlainView):
    """Upload a document (multipart: file, key?, title?, category?, sensitivity?); it is extracted in
    the background. Answers 202 with where to watch its extraction."""

    surface = "sources.write"
    rate_class = "upload"
    operation_id = "upload_source"
    extra_errors: ClassVar[dict[int, str]] = {507: "The document storage is full (``storage_full``); nothing stored."}
    parser_classes = [MultiPartParser]
    request_body: ClassVar[dict[str, Any]] = {
        "multipart/form-data": {
            "type": "object",
            "properties": {
                "file": {"type": "string", "format": "binary", "description": "The document"},
                "key": {"type": "string", "description": "The capture's key (default: generated)"},
                "title": {"type": "string"},
                "category": {"type": "string"},
                "sensitivity": {"type": "string", "enum": ["ordinary", "restricted", "secret"]},
            },
            "required": ["file"],
        }
    }
    response_models = {202: UploadOut}

    def post(self, request: Request) -> Response:
        from ingest.views import extraction_status, ingest_upload

        extraction, existing = ingest_upload(
            member=self.member(request), uploads=request.FILES.getlist("file"), fields=request.data
        )
        key = extraction.document.source.key
        body = UploadOut(key=key, citation=f"capture:{key}", status_url=f"/api/v1/sources/{key}/status",
                         extraction=extraction_status(extraction), existing=existing)  # fmt: skip
        return Response(body.model_dump(), status=202)


class SourceStatusOut(BaseModel):
    key: str
    title: str
    extraction: dict[str, Any] | None


class SourceStatus(PlainView):
    """The extraction status of a source you can read (an upload in progress included)."""

    surface = "sources.read"
    operation_id = "source_status"
    response_models = {200: SourceStatusOut}

    def get(self, request: Request, key: str) -> Response:
        from corpus.selectors import source_get_visible
        from ingest.views import extraction_status, latest_extraction

        caller = request.auth
        assert isinstance(caller, Caller)
        found = source_get_visible(principal=caller.principal, key=key)
        extraction = latest_extraction(found)
        body = SourceStatusOut(key=found.key, title=found.title,
                         extraction=extraction_status(extraction) if extraction else None)  # fmt: skip
        return Response(body.model_dump())


class ZipRenderer(JSONRenderer):
    """Declares ``application/zip`` for the streamed export (its errors are still plain JSON)."""

    media_type = "application/zip"
    format = "zip"


class CorpusExport(PlainView):
    """Everything you can read as a ZIP of Markdown: pages with their frontmatter, captures as
    ``captures/<key>.md``, ``figures.yml`` and a ``README.md`` index; with ``originals=true``
    also each capture's uploaded file under ``originals/<key>/``. Streamed as it is built; the
    same corpus gives the same bytes. Audited (who, when, how many files — never content)."""

    renderer_classes = [JSONRenderer, ZipRenderer]
    surface = "export"
    rate_class = "upload"  # a whole-corpus read: counted with the heavy operations
    operation_id = "export_corpus"
    response_models = {200: OpenApiResponse(response=OpenApiTypes.BINARY, description="A ZIP archive")}
    query_parameters = [
        OpenApiParameter(
            "originals", OpenApiTypes.BOOL, OpenApiParameter.QUERY,
            description="Also include each capture's uploaded original file (default false)",
        )
    ]  # fmt: skip

    def get(self, request: Request) -> HttpResponse | StreamingHttpResponse | Response:
        from corpus.export import Counter, corpus_plan, corpus_render, export_name, zip_stream
        from grants.audit import audit_record

        caller = request.auth
        assert isinstance(caller, Caller)
        principal = caller.principal
        counter = Counter()
        originals = request.query_params.get("originals", "false").lower()
        if originals not in ("true", "false", "1", "0"):
            return Response(error_body("invalid", "originals must be true or false"), status=400)
        refused = self.unacceptable(request, "application/zip")
        if refused is not None:
            return refused
        # Names only: the file count is known before the first byte.
        plan = corpus_plan(principal, originals=originals in ("true", "1"))

        def stream() -> Iterator[bytes]:
            completed = False
            try:
                yield from zip_stream((rendered.file for rendered in corpus_render(principal, plan)), counter)
                completed = True
            finally:
                # Also when the client goes away mid-way: what it received is on the record.
                audit_record(actor=principal, action="corpus.export", target_type="corpus", target="zip",
                             metadata={"files": counter.files, "bytes": counter.bytes, "via": caller.kind,
                                       "completed": completed})  # fmt: skip

        # HEAD: the headers only — the archive is neither built nor recorded as exported (the
        # server ran the whole stream to answer HEAD, and the audit said it was sent).
        response: HttpResponse | StreamingHttpResponse = (
            HttpResponse(content_type="application/zip")
            if request.method == "HEAD"
            else StreamingHttpResponse(stream(), content_type="application/zip")
        )
        response["Content-Disposition"] = f'attachment; filename="{export_name()}"'
        # For a progress bar (the web app's export button): how many files the archive will hold.
        response["X-Brain-Export-Files"] = str(len(plan))
        return response
