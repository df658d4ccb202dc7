"""The Ask page: file a question, watch it (htmx) and read the answer with clickable citations."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponseBase
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from answers.models import Question
from answers.services import as_readable_now, question_ask
from brain.inputs import typed_back
from brain.ratelimit import RateLimited, hit
from brain.text.secrets import NulRefused, SecretRefused
from grants.decorators import member_required
from grants.models import Member


@require_http_methods(["GET", "POST"])
@member_required
def ask(request: HttpRequest, member: Member) -> HttpResponseBase:
    """The Ask page; a question filed goes to its own page. Over the ask rate (the member's one
    window across the web, MCP, REST and Slack) the form comes back with the question still in
    it and when to try again — the bare 429 page lost what was typed."""
    problems: list[str] = []
    status = 400
    retry_after: int | None = None
    # Search's "ask it as a question" link carries the terms (?q=): the box starts with them.
    typed = typed_back(request.GET).get("q", "")[:1000] if request.method == "GET" else ""
    if request.method == "POST":
        try:
            hit(principal_key=f"member:{member.pk}", rate_class="ask")
            question = question_ask(actor=member, text=request.POST.get("text", ""))
            return redirect("answers:question", question_id=question.pk)
        except RateLimited as limited:
            status, retry_after = 429, limited.retry_after
            problems = [
                f"You have asked a lot this minute; ask again in {retry_after} seconds (your question is kept)."
            ]
            typed = typed_back(request.POST).get("text", "")
        except (ValidationError, ValueError) as exc:
            problems = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
            # Keep what was typed — unless it was refused for holding a secret or a NUL.
            if not isinstance(exc, SecretRefused | NulRefused):
                typed = request.POST.get("text", "")
    recent = Question.objects.filter(asker=member).order_by("-created_at")[:10]
    response = render(
        request,
        "answers/ask.html",
        {"recent": recent, "problems": problems, "typed": typed},
        status=status if problems else 200,
    )
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


@require_GET
@vary_on_headers("HX-Request")  # page or fragment by this header: Back must not show the fragment alone
@member_required
def question(request: HttpRequest, member: Member, question_id: int) -> HttpResponseBase:
    found = Question.objects.filter(pk=question_id, asker=member).first()
    if found is None:
        raise Http404
    found = as_readable_now(found, member)  # never what they could read when they asked, only now
    links = [(citation, citation.split("#", 1)[0], "#" + citation.split("#", 1)[1] if "#" in citation else "")
             for citation in found.citations]  # fmt: skip
    template = "answers/_answer.html" if request.headers.get("HX-Request") else "answers/question.html"
    return render(request, template, {"question": found, "links": links, "poll_seconds": poll_seconds(found)})


def poll_seconds(question: Question) -> int:
    """How often the page asks again while ``question`` is unanswered: every second while an
    extractive answer is likely (its first 10 s), then every 2 s, and every 5 s past a minute
    (a model's investigation, or a queue waiting for a worker) — not 60 requests a minute
    from every open tab for as long as it waits."""
    waited = (timezone.now() - question.created_at).total_seconds()
    return 1 if waited < 10 else 2 if waited < 60 else 5
