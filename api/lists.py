"""REST v1 lists: cursor pagination (DRF) and filters (django-filter) over querysets that
already carry the access predicate, each item in the MCP tools' own pydantic model.

A cursor is opaque and stable under inserts (DRF's ``CursorPagination``): a client walking
``next`` sees each row once even while rows are added. ``limit`` sets the page size (at
most 200).
"""

from __future__ import annotations

from typing import Any, ClassVar

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from pydantic import BaseModel
from rest_framework.exceptions import APIException, NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from api.operations import Operation, run_operation
from api.views import PlainView
from brain.callers import Caller
from brain.errors import error_body
from brain.text.secrets import unstorable
from corpus.frontmatter import STATUSES
from corpus.models import Page, Source
from grants.models import Member
from mcp_api.tools.corpus import PageRef, SourceRef
from mcp_api.tools.memory import THE_TEAM, MemoryOut, memory_out
from memory.classify import tag_as_stored
from memory.models import Memory


def _without(errors: list[str], value: str) -> list[str]:
    return [error.replace(value, "that value") if value else error for error in errors]


class InvalidCursor(APIException):
    status_code = 400
    default_code = "invalid"
    default_detail = "cursor: not a cursor this list gave out; start from the first page and follow next"


class Cursor(CursorPagination):
    page_size = 20
    page_size_query_param = "limit"
    max_page_size = 200

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        self.model = queryset.model  # decode_cursor checks a position against its ordering field
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Any) -> Any:
        """DRF's reading of ``?cursor=``, every bad one a 400 that repeats nothing of it: DRF
        answers garbage with a 404 (which here means "missing or not yours"), a cursor is base64
        so a NUL inside passed the control-character check and became a 500, and a position the
        ordering field cannot read was echoed in a 400."""
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise InvalidCursor from None
        if cursor is not None and cursor.position is not None:
            position = str(cursor.position)
            field = self.model._meta.get_field(str(self.ordering[0]).lstrip("-"))
            try:
                if unstorable(position) is not None:
                    raise ValueError(position)
                field.to_python(position)
            except (DjangoValidationError, ValueError, TypeError, OverflowError):
                raise InvalidCursor from None
        return cursor


class PageFilter(django_filters.FilterSet):  # type: ignore[misc]  # django-filter ships no types
    prefix = django_filters.CharFilter(field_name="path", lookup_expr="startswith", help_text="Path prefix")
    words = django_filters.CharFilter(method="title_words", help_text="Words that must all appear in the title")
    type = django_filters.CharFilter()
    category = django_filters.CharFilter()
    status = django_filters.ChoiceFilter(choices=[(status, status) for status in STATUSES])
    owner = django_filters.CharFilter(field_name="owner__user__username", help_text="Owner's username")

    class Meta:
        model = Page
        fields: list[str] = []

    def title_words(self, queryset: QuerySet[Page], name: str, value: str) -> QuerySet[Page]:
        for word in value.split():
            queryset = queryset.filter(title__icontains=word)
        return queryset


class SourceFilter(django_filters.FilterSet):  # type: ignore[misc]
    prefix = django_filters.CharFilter(field_name="key", lookup_expr="startswith", help_text="Key prefix")
    kind = django_filters.ChoiceFilter(choices=Source.Kind.choices)
    tag = django_filters.CharFilter(method="has_tag")

    class Meta:
        model = Source
        fields: list[str] = []

    def has_tag(self, queryset: QuerySet[Source], name: str, value: str) -> QuerySet[Source]:
        return queryset.filter(tags__contains=[value.strip().lower()])


class MemoryFilter(django_filters.FilterSet):  # type: ignore[misc]
    tag = django_filters.CharFilter(method="has_tag")
    kind = django_filters.ChoiceFilter(choices=[("episodic", "episodic"), ("semantic", "semantic")])
    workspace = django_filters.ChoiceFilter(choices=[("personal", "personal"), ("company", "company")])
    status = django_filters.ChoiceFilter(
        choices=[("canonical", "canonical"), ("draft", "draft"), ("deprecated", "deprecated")]
    )
    actor = django_filters.CharFilter(field_name="author__user__username", help_text="Author's username")
    team = django_filters.ChoiceFilter(
        method="the_team", choices=[(THE_TEAM["id"], THE_TEAM["id"]), (THE_TEAM["name"], THE_TEAM["name"])],
        help_text="The one team (id 'company' or name 'Shared'); anything else is a 400",
    )  # fmt: skip

    class Meta:
        model = Memory
        fields: list[str] = []

    def has_tag(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        return queryset.filter(tags__contains=[tag_as_stored(value)])

    def the_team(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        return queryset  # there is one team: naming it changes nothing


class CursorList(PlainView):
    """A paginated, filtered list; subclasses say which rows, which filters, which item model."""

    filterset_class: ClassVar[type[django_filters.FilterSet]]
    ordering: ClassVar[str | tuple[str, ...]]
    item_model: ClassVar[type[BaseModel]]

    def rows(self, caller: Caller) -> QuerySet[Any]:
        raise NotImplementedError

    def item(self, row: Any) -> BaseModel:
        raise NotImplementedError

    def known_query_parameters(self) -> set[str]:
        return {*self.filterset_class.base_filters, "cursor", "limit"}

    def get(self, request: Request) -> Response:
        caller = request.auth
        assert isinstance(caller, Caller)
        limit = request.query_params.get("limit")
        if limit is not None and not (limit.isascii() and limit.isdigit() and 1 <= int(limit) <= Cursor.max_page_size):
            # DRF's paginator quietly used 20 for 0, "abc" and 201: a client asking for 500 got 20.
            message = f"limit must be a whole number from 1 to {Cursor.max_page_size}"
            return Response(error_body("invalid", message), status=400)
        empty = [
            f"{name}: choose one of {', '.join(str(value) for value, _ in choice.extra['choices'])}"
            for name, choice in self.filterset_class.base_filters.items()
            if isinstance(choice, django_filters.ChoiceFilter) and name in request.query_params
            and not request.query_params[name].strip()
        ]  # fmt: skip
        if empty:  # django-filter skips an empty value: "?kind=" listed every kind, not an error
            return Response(error_body("invalid", f"Invalid filter: {'; '.join(empty)}"), status=400)
        filters = self.filterset_class(request.query_params, queryset=self.rows(caller), request=request)
        if not filters.is_valid():
            # Named, never repeated: a refused value (a team's codename, say) stays out of the answer.
            problems = "; ".join(
                f"{field}: {' '.join(_without(errors, request.query_params.get(field, '')))}"
                for field, errors in filters.errors.items()
            )
            return Response(error_body("invalid", f"Invalid filter: {problems}"), status=400)
        paginator = Cursor()
        paginator.ordering = self.ordering
        page: list[Any] = paginator.paginate_queryset(filters.qs, request, view=self) or []
        return Response(
            {
                "results": [self.item(row).model_dump(mode="json") for row in page],
                "next": paginator.get_next_link(),
                "previous": paginator.get_previous_link(),
            }
        )


class PageRefPage(BaseModel):
    results: list[PageRef]
    next: str | None
    previous: str | None


class SourceRefPage(BaseModel):
    results: list[SourceRef]
    next: str | None
    previous: str | None


class MemoryPage(BaseModel):
    results: list[MemoryOut]
    next: str | None
    previous: str | None


class Pages(CursorList):
    """Live pages you can read, by path, with filters; a cursor walks them all."""

    surface = "pages.read"
    operation_id = "list_pages"
    filterset_class = PageFilter
    ordering = "path"
    response_models = {200: PageRefPage}

    def rows(self, caller: Caller) -> QuerySet[Page]:
        return Page.objects.visible_to(caller.principal, "read").select_related("owner__user")

    def item(self, row: Page) -> PageRef:
        return PageRef(path=row.path, title=row.title, type=row.type, category=row.category,
                       owner=row.owner.username, status=row.status, as_of=row.as_of.isoformat())  # fmt: skip


class Sources(CursorList):
    """Captures you can read, newest first, with filters; a cursor walks them all."""

    surface = "sources.read"
    operation_id = "list_sources"
    filterset_class = SourceFilter
    # The id breaks ties: the cursor keeps a position and an offset among equal dates, which
    # only holds when equal dates come back in the same order every time (400 captures of one
    # date were walked with one skipped and one seen twice).
    ordering = ("-captured_at", "-id")
    response_models = {200: SourceRefPage}

    def rows(self, caller: Caller) -> QuerySet[Source]:
        return Source.objects.visible_to(caller.principal, "read")

    def item(self, row: Source) -> SourceRef:
        return SourceRef(key=row.key, kind=row.kind, title=row.title, category=row.category, tags=list(row.tags),
                         captured_at=row.captured_at.isoformat())  # fmt: skip


class Memories(CursorList):
    """Memories you can see, newest first, with filters; a cursor walks them all.

    ``POST`` stores one (the ``remember`` tool)."""

    operations = {"POST": Operation(tool="remember", surface="memory", status=201)}
    surface = "memory"
    operation_id = "list_memories"
    filterset_class = MemoryFilter
    ordering = ("-created_at", "-id")  # the id breaks ties (see the sources' list)
    response_models = {200: MemoryPage}

    def rows(self, caller: Caller) -> QuerySet[Memory]:
        if not isinstance(caller.principal, Member):
            return Memory.objects.none()
        return Memory.objects.visible_to(caller.principal).select_related("author__user")

    def item(self, row: Memory) -> MemoryOut:
        return memory_out(row)

    def rate_class_for(self, method: str | None) -> str:
        return "write" if method == "POST" else "read"

    def post(self, request: Request) -> Response:
        return run_operation(request, self.operations["POST"], {})
