"""Review UI and the build API: who may see a build is decided by ``build_get_visible``.

A person who is neither the requester, a participant, nor a holder of approve on one of
the build's pages gets the very same 404 as for a build id that does not exist.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Case, Count, F, IntegerField, Q, Value, When, Window
from django.db.models.functions import RowNumber
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from brain.errors import error_response, json_error
from brain.inputs import typed_back
from brain.text.secrets import NulRefused, SecretRefused
from builds.driver import ArchiveRefused, files_from_zip, import_job_create, job_progress
from builds.forms import RejectForm, ReviewForm, ZipImportForm
from builds.history import entry_by_number, page_history
from builds.models import Build
from builds.review import build_approvers, build_review, revision_lines
from builds.selectors import (
    build_get_visible,
    build_promotion_blockers,
    build_summary,
    builds_awaiting_page,
    is_requester_or_participant,
    visible_drafts,
)
from builds.services import (
    ImportInvalid,
    PromotionBlocked,
    build_cancel,
    build_credential_issue,
    build_open,
    build_promote,
    build_reject,
    build_submit,
)
from corpus.diffs import line_diff
from corpus.models import Page
from corpus.views import page_unavailable
from grants.decorators import limited_view, member_required
from grants.models import Member
from grants.principals import principal_for_user


def _visible_or_404(request: HttpRequest, public_id: str) -> Build:
    try:
        return build_get_visible(principal=principal_for_user(request.user), public_id=public_id)
    except Build.DoesNotExist:
        raise Http404("build not found") from None


_AGENT_BUILD_SESSION_KEY = "_brain_agent_build"


@never_cache  # a new build's credential is shown once: never kept for Back
@login_required
@require_http_methods(["GET", "POST"])
@limited_view("write")
def build_queue(request: HttpRequest) -> HttpResponse:
    """Builds awaiting your review and your own; POST starts an agent build (its credential shown once).

    Post, redirect, get: the credential rides in the session to the very next page, which
    removes it as it shows it, so a reload neither opens a second build nor shows it again.
    A refused start (a secret in the title) is the page again, saying why beside the form.
    """
    member = principal_for_user(request.user)
    if request.method == "POST":
        if member is None:
            raise PermissionDenied("only members can open builds")
        title = str(request.POST.get("title", "")).strip() or "Agent build"
        purpose = str(request.POST.get("purpose", ""))[:5000]
        try:
            with transaction.atomic():  # no open build left without its credential
                build = build_open(actor=member, title=title[:200], purpose=purpose)
                credential, token = build_credential_issue(actor=member, build=build)
        except (SecretRefused, NulRefused) as refused:
            # What was typed comes back, except a field holding what was refused: never echoed.
            typed = {name: value for name, value in typed_back(request.POST).items() if name in ("title", "purpose")}
            return _queue_page(request, member, problem=str(refused), typed=typed, status=400)
        request.session[_AGENT_BUILD_SESSION_KEY] = {
            "id": str(build.public_id), "title": build.title, "token": token,
            "expires": credential.expires_at.strftime("%Y-%m-%d %H:%M"),
        }  # fmt: skip
        return redirect("builds:build-queue")
    cursor = str(request.GET.get("cursor", ""))
    after = _queue_position(member, cursor) if cursor and member is not None else None
    if cursor and member is not None and after is None:
        # Never says why (a build gone, another member's link, a forged position): one answer.
        return error_response(request, 400, "invalid", _BAD_QUEUE_CURSOR)
    return _queue_page(request, member, started=request.session.pop(_AGENT_BUILD_SESSION_KEY, None), after=after)


# The builds awaiting review are listed a page at a time, newest first; "older" follows a cursor.
QUEUE_PAGE = 20
_QUEUE_CURSOR_SALT = "builds.queue.cursor"
_BAD_QUEUE_CURSOR = "cursor: not a position this list gave out; start from the first page and follow its links"


def _queue_cursor(member: Member, build: Build) -> str:
    """The opaque position after ``build`` in ``member``'s queue: its public id, signed for them
    (so no one can place the list after a build they were never shown, to learn when it came)."""
    return signing.Signer(salt=f"{_QUEUE_CURSOR_SALT}:{member.pk}").sign(str(build.public_id))


def _queue_position(member: Member, cursor: str) -> Build | None:
    """The build a ``_queue_cursor`` names (its place in the order only), or None if it is not one."""
    try:
        public_id = signing.Signer(salt=f"{_QUEUE_CURSOR_SALT}:{member.pk}").unsign(cursor[:200])
        return Build.objects.only("id", "submitted_at").get(public_id=public_id)
    except (signing.BadSignature, ValidationError, ValueError, Build.DoesNotExist):
        return None


def _queue_page(
    request: HttpRequest,
    member: Member | None,
    *,
    started: dict[str, str] | None = None,
    problem: str = "",
    typed: dict[str, str] | None = None,
    status: int = 200,
    after: Build | None = None,
) -> HttpResponse:
    """The builds page; ``started`` is a just-opened agent build (its credential, shown once),
    ``problem`` and ``typed`` a refused start, ``after`` where the page of builds awaiting
    review starts (the newest when None)."""
    agent_config = None
    if started:
        url = settings.BRAIN_BASE_URL + "/api/build/mcp"
        agent_config = json.dumps(
            {"mcpServers": {"brain-build": {"type": "http", "url": url,
                                            "headers": {"Authorization": f"Bearer {started['token']}"}}}},
            indent=2,
        )  # fmt: skip
    mine, older = _builds_of(member) if member else ([], 0)
    awaiting = builds_awaiting_page(principal=member, limit=QUEUE_PAGE, after=after)
    next_cursor = _queue_cursor(member, awaiting.builds[-1]) if member is not None and awaiting.more else ""
    return render(
        request,
        "builds/build_queue.html",
        {"awaiting": awaiting.builds, "awaiting_next": next_cursor, "awaiting_later_page": after is not None,
         "mine": mine, "older": older,
         "started": started, "agent_config": agent_config, "mcp_url": settings.BRAIN_BASE_URL + "/api/build/mcp",
         "problem": problem, "typed": typed or {}},
        status=status,
    )  # fmt: skip


FINISHED_LISTED = 20


def _builds_of(member: Member) -> tuple[list[Build], int]:
    """``member``'s builds still in progress (all of them: an open build past the newest 20
    vanished from every page), then the newest finished ones, and how many older are not
    listed — one query: each build's place among its kind (in progress or finished) and the
    size of its kind, by window functions."""
    in_progress = Q(status__in=(Build.Status.OPEN, Build.Status.AWAITING_REVIEW))
    kind = Case(When(in_progress, then=Value(0)), default=Value(1), output_field=IntegerField())
    rows = (
        Build.objects.filter(requester=member)
        .annotate(finished=kind)
        .annotate(
            place=Window(RowNumber(), partition_by=[F("finished")], order_by=F("created_at").desc()),
            of_kind=Window(Count("id"), partition_by=[F("finished")]),
        )
        # In progress: place counted down to 0, so every one passes; finished: the newest 20.
        .annotate(listed_place=F("place") * F("finished"))
        .filter(listed_place__lte=FINISHED_LISTED)
        .order_by("finished", "-created_at")
    )
    listed: list[Build] = list(rows)
    finished = int(next((getattr(row, "of_kind", 0) for row in listed if getattr(row, "finished", 0)), 0))
    return listed, max(finished - FINISHED_LISTED, 0)


@login_required
@require_GET
def build_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    build = _visible_or_404(request, public_id)
    return _render_detail(request, build)


# Changes diffed on one page of a build; a larger build's changes are paged (?changes=2).
CHANGES_PER_PAGE = 50


def _changes_page(request: HttpRequest) -> int:
    """The page of changes asked for (1 when none, or when the value is not a page number)."""
    raw = request.GET.get("changes", "1")
    return int(raw) if raw.isascii() and raw.isdigit() and 0 < len(raw) < 7 and int(raw) > 0 else 1


def _render_detail(
    request: HttpRequest,
    build: Build,
    *,
    form: ReviewForm | None = None,
    reject_form: RejectForm | None = None,
    status: int = 200,
) -> HttpResponse:
    member = principal_for_user(request.user)
    is_requester = member is not None and member.pk == build.requester_id
    waiting = build.status in (Build.Status.OPEN, Build.Status.AWAITING_REVIEW)
    changes_page = _changes_page(request)
    first = (changes_page - 1) * CHANGES_PER_PAGE
    review = build_review(build=build, viewer=member, window=slice(first, first + CHANGES_PER_PAGE))
    if not review.changes and review.total:  # past the last page: show the last one
        changes_page = (review.total + CHANGES_PER_PAGE - 1) // CHANGES_PER_PAGE
        first = (changes_page - 1) * CHANGES_PER_PAGE
        review = build_review(build=build, viewer=member, window=slice(first, first + CHANGES_PER_PAGE))
    return render(
        request,
        "builds/build_detail.html",
        {
            "build": build,
            "review": review,
            "changes_page": changes_page,
            "changes_pages": max((review.total + CHANGES_PER_PAGE - 1) // CHANGES_PER_PAGE, 1),
            **visible_drafts(build=build, viewer=member),
            "blockers": build_promotion_blockers(build=build, approver=member) if member else [],
            "form": form or ReviewForm(),
            "reject_form": reject_form or RejectForm(),
            "progress": _progress(build, member),
            "promotion": getattr(build, "promotion", None) if build.status == Build.Status.PROMOTED else None,
            # Reviews are recorded when a build is approved or rejected, which ends it.
            "decisions": (
                build.reviews.select_related("reviewer__user").order_by("created_at")
                if build.status in (Build.Status.PROMOTED, Build.Status.REJECTED)
                else []
            ),
            # Only the requester is told who could approve (they wrote every change, so the
            # list names nothing they could not see); computed only while it can still matter.
            "approvers": build_approvers(build=build, requester=member)
            if is_requester and waiting and member
            else None,
            "may_withdraw": is_requester and waiting,
        },
        status=status,
    )


@login_required
@require_GET
def build_progress(request: HttpRequest, public_id: str) -> HttpResponse:
    """The progress fragment the build page polls (htmx) while an import is being drafted."""
    build = _visible_or_404(request, public_id)
    progress = _progress(build, principal_for_user(request.user))
    return render(request, "builds/_progress.html", {"build": build, "progress": progress})


def _progress(build: Build, viewer: Member | None) -> dict[str, object]:
    """How far an import's drafting is; the counts only for those who sent the files.

    An approver of one page sees the build, but the number of files is the number of pages
    it touches — including pages they cannot read — so they are told only that it drafts.
    Only an open build drafts: for any other, nothing is read.
    """
    if build.status != Build.Status.OPEN:
        return {"running": False, "done": None, "total": None}
    done, total = job_progress(build)
    if viewer is not None and is_requester_or_participant(viewer, build):
        return {"running": bool(total), "done": done, "total": total}
    return {"running": bool(total), "done": None, "total": None}


@require_POST
@member_required
def build_approve(request: HttpRequest, member: Member, public_id: str) -> HttpResponse:
    build = _visible_or_404(request, public_id)
    form = ReviewForm(request.POST)
    if not form.is_valid():
        return _render_detail(request, build, form=form, status=400)
    try:
        build_promote(actor=member, build=build, note=form.cleaned_data["note"])
    except (SecretRefused, NulRefused) as refused:
        return error_response(request, 400, "refused", str(refused))
    except PromotionBlocked as blocked:
        # Nothing was promoted. Said here too: a reason found only while promoting (a page
        # changed meanwhile) is not yet in the list the detail page shows.
        messages.error(request, f"Not promoted: {'; '.join(blocked.blockers)}.")
        return redirect("builds:build-detail", public_id=build.public_id)
    return redirect("builds:build-detail", public_id=build.public_id)


@require_POST
@member_required
def build_reject_view(request: HttpRequest, member: Member, public_id: str) -> HttpResponse:
    build = _visible_or_404(request, public_id)
    form = RejectForm(request.POST)
    if not form.is_valid():
        # Keep what was typed; say what is missing beside the field.
        return _render_detail(request, build, reject_form=form, status=400)
    try:
        build_reject(actor=member, build=build, note=form.cleaned_data["reason"])
    except (SecretRefused, NulRefused) as refused:
        return error_response(request, 400, "refused", str(refused))
    except PermissionDenied:
        raise PermissionDenied("you may not reject this build") from None
    except ValidationError as refused:
        # Decided meanwhile (another tab, another reviewer, a double submit): say so on the
        # build, which shows what became of it — not "you may not", which was untrue.
        messages.error(request, f"Not rejected: {' '.join(refused.messages)}.")
        return redirect("builds:build-detail", public_id=build.public_id)
    return redirect("builds:build-detail", public_id=build.public_id)


@require_POST
@member_required
def build_withdraw(request: HttpRequest, member: Member, public_id: str) -> HttpResponse:
    """The requester withdraws their unfinished build (``build_cancel``: audited, its
    credentials revoked, nothing reaches the corpus). A build the member cannot see is the
    same 404 as a missing one; one they see but did not request is a 403."""
    build = _visible_or_404(request, public_id)
    try:
        build_cancel(actor=member, build=build)
    except PermissionDenied:
        raise PermissionDenied("only the build's requester may withdraw it") from None
    except ValidationError:
        messages.error(request, "This build has already ended: there is nothing to withdraw.")
        return redirect("builds:build-detail", public_id=build.public_id)
    messages.success(request, "You withdrew this build: it will not be reviewed, and its credentials no longer work.")
    return redirect("builds:build-detail", public_id=build.public_id)


@require_POST
@member_required
def build_submit_view(request: HttpRequest, member: Member, public_id: str) -> HttpResponse:
    """The requester sends their open build for review (``build_submit``): a build opened from
    the web — a memory proposed as a page — had no way there, and waited on Reviews for ever.
    A build the member cannot see is the same 404 as a missing one; another's is a 403."""
    build = _visible_or_404(request, public_id)
    try:
        build_submit(actor=member, build=build)
    except PermissionDenied:
        raise PermissionDenied("only the build's requester may submit it") from None
    except ValidationError as refused:
        messages.error(request, "Not submitted: " + "; ".join(refused.messages))
        return redirect("builds:build-detail", public_id=build.public_id)
    messages.success(request, "Submitted for review: the people who may approve it see it on their Reviews page.")
    return redirect("builds:build-detail", public_id=build.public_id)


@login_required
@require_http_methods(["GET", "POST"])
@limited_view("upload")
def build_import_upload(request: HttpRequest) -> HttpResponse:
    member = principal_for_user(request.user)
    if member is None:
        raise PermissionDenied("only members can open builds")
    form = ZipImportForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            # The upload is read from where Django spooled it (a temporary file past 2.5 MB).
            files = files_from_zip(form.cleaned_data["archive"])
            build = import_job_create(requester=member, files=files, title=form.cleaned_data["title"])
            return redirect("builds:build-detail", public_id=build.public_id)
        except ArchiveRefused as exc:
            problems = [str(exc)]
        except ImportInvalid as invalid:
            problems = [f"{report.path}: {problem}" for report in invalid.reports for problem in report.problems]
        except (SecretRefused, NulRefused) as refused:
            problems = [str(refused)]
            form = ZipImportForm()  # never echo the refused value back into the page
    status = 400 if request.method == "POST" else 200
    return render(request, "builds/build_import.html", {"form": form, "problems": problems}, status=status)


@require_GET
def build_api_detail(request: HttpRequest, public_id: str) -> JsonResponse:
    if not request.user.is_authenticated:
        # The web page's own JSON: a signed-in browser only (programs use GET /api/v1/builds/<id>).
        return json_error("unauthenticated", "Sign in first; with a token, use GET /api/v1/builds/<id>.", 401)
    try:
        build = build_get_visible(principal=principal_for_user(request.user), public_id=public_id)
    except Build.DoesNotExist:
        return json_error("not_found", "Not found.", 404)
    return JsonResponse(build_summary(build=build, viewer=principal_for_user(request.user)))


@login_required
@require_GET
def page_history_view(request: HttpRequest, path: str) -> HttpResponse:
    """Every promoted revision of a page, and the diff between any two (``?from=&to=``)."""
    member = principal_for_user(request.user)
    try:
        page, entries = page_history(principal=member, path=path)
    except Page.DoesNotExist:
        return page_unavailable(request)
    compare = None
    chosen_from, chosen_to = request.GET.get("from", ""), request.GET.get("to", "")
    if chosen_from or chosen_to:
        newer = entry_by_number(entries, chosen_to) if chosen_to else (entries[0] if entries else None)
        older = entry_by_number(entries, chosen_from) if chosen_from else None
        if newer is None or (chosen_from and older is None):
            return render(
                request,
                "builds/page_history.html",
                {"page": page, "entries": entries, "problem": "No such revision of this page. Pick two from the list."},
                status=404,
            )
        compare = {
            "older": older,
            "newer": newer,
            "diff": line_diff(
                revision_lines(older.revision if older else None, member), revision_lines(newer.revision, member)
            ),
        }
    return render(
        request,
        "builds/page_history.html",
        {"page": page, "entries": entries, "compare": compare, "chosen_from": chosen_from, "chosen_to": chosen_to},
    )
