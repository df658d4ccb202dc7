"""Calendar capture on the web (``/memory/calendars/``) and the REST import endpoint.

The page imports an uploaded ``.ics`` file, lists the member's subscriptions with when each
was last checked and what went wrong, adds and removes them, and refreshes one on demand.
``POST /api/memory/calendar/import`` takes the ICS bytes as the body. Both call
``memory.calendars``; neither ever shows another member's subscription (a foreign id is the
same 404 as a missing one).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from brain.errors import json_error
from brain.inputs import typed_back
from grants.decorators import limited_view
from grants.models import Member
from memory.api import memory_api
from memory.calendars import (
    MAX_BYTES,
    MAX_EVENTS_PER_REQUEST,
    calendar_import,
    calendar_refresh_request,
    calendar_subscribe,
    calendar_subscriptions,
    calendar_unsubscribe,
)
from memory.classify import MemoryInvalid
from memory.models import CalendarSubscription
from memory.views import REFUSALS, member_view

_OUTCOME_SESSION_KEY = "memory-calendar-outcome"
SKIPPED_SHOWN = 50


@require_http_methods(["GET", "POST"])
@limited_view("upload")  # an import embeds every event; a refresh fetches a URL
@member_view
def calendars(request: HttpRequest, member: Member) -> HttpResponseBase:
    """GET: the page. POST ``action`` = import | subscribe | unsubscribe | refresh, then redirect.

    An import's counts ride in the session to the next page (post, redirect, get), so a
    reload neither imports again nor loses the outcome.
    """
    if request.method == "GET":
        return _page(request, member)
    action = request.POST.get("action", "")
    try:
        if action == "import":
            try:
                _import(request, member)
            except REFUSALS as refused:
                # The page again (400, not a redirect to a 200) with the layer as chosen.
                messages.error(request, str(refused) or "You may not do this.")
                return _page(request, member, typed=typed_back(request.POST), status=400)
        elif action == "subscribe":
            try:
                subscription = calendar_subscribe(
                    actor=member, url=request.POST.get("url", ""), name=request.POST.get("name", ""),
                    workspace=request.POST.get("workspace") or None,
                )  # fmt: skip
            except REFUSALS as refused:
                # The form again with the address and name as typed, and why not (a redirect emptied it).
                messages.error(request, str(refused) or "You may not do this.")
                return _page(request, member, typed=typed_back(request.POST), status=400)
            # Fetched by a worker at once (a fetch may take 30 s, an import embeds up to 2,000
            # events): the page follows it and shows the outcome on the subscription's row.
            messages.success(request, f"Subscribed to {subscription.name}. Fetching it now; its row shows the outcome.")
        elif action == "refresh":
            subscription = calendar_refresh_request(actor=member, subscription_id=request.POST.get("subscription"))
            messages.success(request, f"{subscription.name}: fetching it now; its row shows the outcome.")
        elif action == "unsubscribe":
            calendar_unsubscribe(actor=member, subscription_id=request.POST.get("subscription"))
            messages.success(request, "Unsubscribed. The memories it brought in stay.")
        else:
            raise Http404
    except CalendarSubscription.DoesNotExist as exc:
        raise Http404 from exc
    return redirect("memory:calendars")


def _page(request: HttpRequest, member: Member, *, typed: Any = None, status: int = 200) -> HttpResponse:
    subscriptions = calendar_subscriptions(actor=member)
    context = {
        "subscriptions": subscriptions,
        # While a fetch is queued or running the table follows it (htmx, every 2 s).
        "fetching": any(subscription.refresh_requested_at is not None for subscription in subscriptions),
        "outcome": request.session.pop(_OUTCOME_SESSION_KEY, None) if typed is None else None,
        "skipped_shown": SKIPPED_SHOWN,
        "typed": typed or {},
    }
    return render(request, "memory/calendars.html", context, status=status)


def _import(request: HttpRequest, member: Member) -> None:
    upload = request.FILES.get("file")
    if upload is None:
        raise MemoryInvalid("choose an .ics file to import")
    if upload.size is not None and upload.size > MAX_BYTES:  # before reading it into memory
        raise MemoryInvalid("the calendar is over 5 MB")
    result = calendar_import(
        actor=member, data=upload.read(), source_name=upload.name or "upload",
        workspace=request.POST.get("workspace") or None, max_events=MAX_EVENTS_PER_REQUEST,
    )  # fmt: skip
    request.session[_OUTCOME_SESSION_KEY] = result.as_dict(skipped_limit=SKIPPED_SHOWN)


@memory_api(("POST",), rate_class="upload")
def api_import(request: HttpRequest, member: Member) -> HttpResponse:
    """``POST /api/memory/calendar/import?workspace=``: the body is the ICS file (``text/calendar``).

    200 with the counts (``stored``, ``updated``, ``unchanged``, ``duplicate``, ``skipped``
    with a reason each); 400 for a file that is not iCalendar or over 400 events (subscribe instead); 413 over
    5 MB (the decorator); 415 for another content type.
    """
    if request.content_type != "text/calendar":
        return json_error("unsupported_media_type", "Send the calendar as Content-Type: text/calendar.", 415)
    result = calendar_import(
        actor=member, data=request.body, source_name="api", workspace=request.GET.get("workspace") or None,
        max_events=MAX_EVENTS_PER_REQUEST,
    )  # fmt: skip
    return JsonResponse(result.as_dict())
