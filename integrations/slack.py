"""``/brain`` for Slack: verified before anything else, acknowledged at once, answered later.

The signature (``v0`` HMAC-SHA256 over ``v0:<timestamp>:<body>`` with the signing secret,
5-minute window, constant-time compare) is checked with slack-sdk's ``SignatureVerifier``
before the body is even parsed. Subcommands: ``/brain <question>``, ``/brain search <terms>``,
``/brain help``, ``/brain link``. A Slack user not linked to a member gets instructions,
never an answer; answers run under the linked member's grants.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import secrets
import uuid
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST
from slack_sdk.signature import SignatureVerifier

from answers.models import Question
from answers.services import LEASE as QUESTION_LEASE
from answers.services import question_ask, question_run
from brain.errors import json_error
from brain.inputs import reads_its_own_form
from brain.jobs import enqueue_on_commit, resend_lost
from brain.leases import Lease, lease_claim_unfinished, lease_expired, lease_extend, lease_finish
from brain.ratelimit import RateLimited, hit
from corpus.search import SearchError, search
from grants.audit import audit_record
from grants.models import Member
from grants.principals import principal_for_user
from integrations.models import SlackDelivery, SlackLink
from integrations.secrets import SecretUnavailable, secret_get

logger = logging.getLogger(__name__)
SIGNING_SECRET = "slack_signing_secret"  # noqa: S105 (the setting's name, not a value)
LINK_LIFETIME = dt.timedelta(minutes=10)
# Slack accepts posts to a slash command's response_url for 30 minutes.
RESPONSE_URL_LIFETIME = dt.timedelta(minutes=30)
# How long a delivery's chain holds its lease without word: longer than one answer run (the
# question's own lease), one post (10 s timeout) or a retry's 15 s wait, so a slow answer
# does not start a second chain. A chain that dies is taken over this long after.
DELIVERY_HOLD = QUESTION_LEASE + dt.timedelta(minutes=1)
HELP = (
    "*/brain <question>* — an answer from the pages you can read, with its sources\n"
    "*/brain search <terms>* — matching pages\n"
    "*/brain link* — connect your Slack account to your Brain account\n"
    "*/brain help* — this message"
)


def _ephemeral(text: str) -> JsonResponse:
    return JsonResponse({"response_type": "ephemeral", "text": text})


def _over_limit(key: str, rate_class: str) -> JsonResponse | None:
    """Count one call in the caller's window (the one every surface shares for a member); a
    Slack-shaped refusal when it is full (Slack shows a 429 as "dispatch failed", not why)."""
    try:
        hit(principal_key=key, rate_class=rate_class)
    except RateLimited as limited:
        return _ephemeral(f"Too many requests from you: try again in {limited.retry_after} seconds.")
    return None


def _page_url(path: str) -> str:
    return settings.BRAIN_BASE_URL + reverse("corpus:page-detail", kwargs={"path": path.split("#", 1)[0]})


_SIGNATURE_FORM = re.compile(r"v0=[0-9a-f]{64}")
# Slack's user ids ("U024BE7LH", "W0123…"): letters and digits, and they fit SlackLink's column.
_SLACK_USER = re.compile(r"[A-Z0-9]{1,32}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_RESPONSE_URL = 1000  # SlackDelivery.response_url


def _shown(value: str, limit: int = 80) -> str:
    """A name Slack sent (user name, workspace), as stored and shown: one line, no control characters."""
    return " ".join(_CONTROL.sub(" ", value).split())[:limit]


def _response_url_problem(url: str) -> str | None:
    """Why ``url`` is not a Slack response URL we may post an answer to, or None.

    The answer (what the member may read) is posted there later, from a worker: a URL other
    than Slack's (``BRAIN_SLACK_RESPONSE_URL_PREFIX``) would make Brain post a member's
    answer, from inside the network, wherever a signed request said.
    """
    if not url or len(url) > MAX_RESPONSE_URL or _CONTROL.search(url) or "\\" in url:
        return "The request carries no usable response_url."
    allowed = urlsplit(settings.BRAIN_SLACK_RESPONSE_URL_PREFIX)
    try:
        given = urlsplit(url)
        same_server = (given.scheme, given.hostname, given.port) == (allowed.scheme, allowed.hostname, allowed.port)
    except ValueError:  # a port that is not a number
        same_server = False
    # Compared by parts, not as text: "https://hooks.slack.com.evil/" and "…@evil/" are other servers.
    if not same_server or given.username or not given.path.startswith(allowed.path):
        return "The request's response_url is not Slack's."
    return None


def slack_text(text: str) -> str:
    """``text`` from a page or an answer, as Slack shows it literally: its markup is ``<…>``
    (links, ``<!channel>`` mentions) and ``&`` entities, so a page titled
    ``<https://evil.example|Re-link>`` would otherwise post a disguised link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@reads_its_own_form  # text pasted from Word holds control characters: answered below, in Slack
@csrf_exempt
@require_POST
def commands(request: HttpRequest) -> HttpResponse:
    try:
        signing_secret = secret_get(SIGNING_SECRET)
    except SecretUnavailable:
        return json_error("unavailable", "Slack is not configured on this Brain.", 503)
    verifier = SignatureVerifier(signing_secret)
    timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
    if (not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12
            or not _SIGNATURE_FORM.fullmatch(request.headers.get("X-Slack-Signature", ""))):  # fmt: skip
        # slack-sdk's verifier raises on a non-numeric timestamp, int() on one past 4,300
        # digits, and hmac.compare_digest on a non-ASCII signature (each a 500 before any
        # check): refuse such a request here.
        return json_error("bad_signature", "The request is not signed by Slack, or it is older than five minutes.", 401)
    if not verifier.is_valid(
        body=request.body.decode("utf-8", errors="replace"),
        timestamp=request.headers.get("X-Slack-Request-Timestamp", ""),
        signature=request.headers.get("X-Slack-Signature", ""),
    ):
        return json_error("bad_signature", "The request is not signed by Slack, or it is older than five minutes.", 401)
    form = QueryDict(request.body.decode("utf-8", errors="replace"))
    # One line of words: a control character (Word's line break is a vertical tab) is a space.
    text = " ".join(_CONTROL.sub(" ", form.get("text", "")).split())
    slack_user = form.get("user_id", "")
    if not _SLACK_USER.fullmatch(slack_user):
        # Slack always sends one; anything else (too long for the column, a NUL) is not Slack.
        return json_error("invalid", "The request names no Slack user (user_id).", 400)
    if text in ("", "help"):
        return _ephemeral(HELP)
    if text == "link":
        # Keyed by the Slack user: no member yet. Each link is a row; the window bounds them.
        refused = _over_limit(f"slack:{slack_user}", "write")
        if refused is not None:
            return refused
        code = secrets.token_urlsafe(24)
        SlackLink.objects.create(
            code_hash=hashlib.sha256(code.encode()).hexdigest(), slack_user_id=slack_user,
            slack_user_name=_shown(form.get("user_name", "")),
            slack_team=_shown(form.get("team_domain", "") or form.get("team_id", "")),
            expires_at=timezone.now() + LINK_LIFETIME,
        )  # fmt: skip
        url = settings.BRAIN_BASE_URL + reverse("integrations:slack-link", kwargs={"code": code})
        return _ephemeral(f"Open this link while signed in to Brain, within 10 minutes: {url}")
    member = Member.objects.select_related("user").filter(slack_user_id=slack_user).first()
    if member is None:
        return _ephemeral("Your Slack account is not linked to Brain yet. Type */brain link* and open the link.")
    if not member.is_active or not member.user.is_active:
        # Linking again would be refused (the account is still someone's): say what would help.
        return _ephemeral(
            "Your Slack account is linked to a Brain account that is suspended. "
            "Ask an administrator to reactivate it, or to clear its Slack link so you can link again."
        )
    if text == "search":
        return _ephemeral("Say what to search for: */brain search* _words_")
    refused = _over_limit(f"member:{member.pk}", "search" if text.startswith("search ") else "ask")
    if refused is not None:
        return refused
    if text.startswith("search "):
        try:
            results = search(principal=member, query=text.removeprefix("search "), k=5).results
        except SearchError as exc:
            return _ephemeral(str(exc))
        if not results:
            return _ephemeral("No pages you can read match.")
        lines = [f"• <{_page_url(r.path)}|{slack_text(r.title)}> — {slack_text(r.heading_path or r.path)}"
                 for r in results]  # fmt: skip
        return _ephemeral("\n".join(lines))
    response_url = form.get("response_url", "")
    problem = _response_url_problem(response_url)
    if problem is not None:
        return json_error("invalid", problem, 400)
    try:
        with transaction.atomic():
            question = question_ask(actor=member, text=text, enqueue=False)
            delivery = SlackDelivery.objects.create(question=question, response_url=response_url)
            enqueue_on_commit("integrations.slack_answer", delivery.pk)
    except (ValidationError, ValueError) as exc:
        return _ephemeral(
            "That question cannot be asked: "
            + slack_text("; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc))
        )
    return _ephemeral("Looking into it… the answer will appear here.")


def slack_delivery_claim(delivery_id: int, held: str | None = None) -> Lease | None:
    """The lease of one delivery's task chain: ``held`` (the token a retry carries) when it is
    still this row's, pushed out by ``DELIVERY_HOLD``; otherwise a new claim, which succeeds
    only on an undelivered row nobody holds, or one whose holder died (its lease ran out).
    ``None``: delivered, gone, or another chain is on it."""
    if held is not None:
        lease = Lease(model=SlackDelivery, pk=delivery_id, token=uuid.UUID(held), attempt=0)
        if lease_extend(lease, DELIVERY_HOLD):
            return lease
    return lease_claim_unfinished(
        SlackDelivery, delivery_id, unfinished=Q(delivered_at__isnull=True), duration=DELIVERY_HOLD
    )


def slack_answer(delivery_id: int, lease: Lease | None = None) -> str:
    """Answer the delivery's question (as its asker) and post it to Slack's response URL,
    holding the delivery's lease (``lease``, or one claimed here): of two calls for one
    delivery, one posts and the other returns ``skipped``.

    Returns ``delivered``, ``skipped`` (already delivered, gone or held by another chain),
    ``pending`` (the question is still being answered) or ``undelivered`` (Slack could not
    be reached); for the last two the lease is kept for the retry that follows.
    """
    lease = lease or slack_delivery_claim(delivery_id)
    if lease is None:
        return "skipped"
    delivery = SlackDelivery.objects.select_related("question").filter(pk=delivery_id).first()
    if delivery is None:
        return "skipped"
    question_run(delivery.question_id)
    question = Question.objects.get(pk=delivery.question_id)
    if question.status == Question.Status.ANSWERED:
        sources = " · ".join(
            f"<{_page_url(citation)}|{slack_text(citation.split('#', 1)[0])}>" for citation in question.citations
        )
        text = f"{slack_text(question.answer)}\n\nSources: {sources}"
    elif question.status in (Question.Status.QUEUED, Question.Status.RUNNING):
        return "pending" if lease_extend(lease, DELIVERY_HOLD) else "skipped"
    else:
        text = f"No answer: {slack_text(question.refusal_reason)}"
    # Answering may have taken long: post only while the lease is still ours (a chain that
    # outlived it leaves the posting to the one that took over).
    if not lease_extend(lease, DELIVERY_HOLD):
        return "skipped"
    try:
        response = requests.post(delivery.response_url, json={"response_type": "ephemeral", "text": text}, timeout=10)
        response.raise_for_status()
    except requests.RequestException as exc:
        logger.warning("slack delivery %s failed: %s", delivery.pk, type(exc).__name__)
        return "undelivered"
    lease_finish(lease, delivered_at=timezone.now())
    return "delivered"


@login_required
@require_http_methods(["GET", "POST"])
def link(request: HttpRequest, code: str) -> HttpResponse:
    """Bind the Slack user of a one-time code to the signed-in member (after a confirming POST)."""
    member = principal_for_user(request.user)
    row = SlackLink.objects.filter(code_hash=hashlib.sha256(code.encode()).hexdigest(), used_at__isnull=True,
                                   expires_at__gt=timezone.now()).first()  # fmt: skip
    if member is None or row is None:
        raise Http404
    # A link sent by someone else binds the sender's Slack account to whoever opens it: the page
    # says whose account it is, that only a link one asked for oneself should be confirmed, and
    # which existing link it would replace.
    replaces = member.slack_user_id if member.slack_user_id not in ("", None, row.slack_user_id) else ""
    context: dict[str, Any] = {
        "slack_user_id": row.slack_user_id, "slack_user_name": row.slack_user_name, "slack_team": row.slack_team,
        "done": False, "error": "", "replaces": replaces,
    }  # fmt: skip
    if request.method == "POST":
        try:
            with transaction.atomic():
                Member.objects.filter(pk=member.pk).update(slack_user_id=row.slack_user_id)
                SlackLink.objects.filter(pk=row.pk).update(used_at=timezone.now())
                audit_record(actor=member, action="slack.link", target_type="member", target=member.username)
            context["done"] = True
        except IntegrityError:
            context["error"] = "That Slack account is already linked to another member."
    return render(request, "integrations/slack_link.html", context)


def slack_deliveries_sweep() -> int:
    """Re-send undelivered deliveries while Slack still accepts their response URL (30
    minutes): those whose chain died (lease expired) at once, those never started (asked more
    than a minute ago, never claimed) when the queue is idle."""
    now = timezone.now()
    # A chain holds its delivery's lease through its retries: a held row is re-sent only
    # once that lease ran out (its worker died), and the new task's claim is then the only one.
    return resend_lost(
        "integrations.slack_answer",
        SlackDelivery.objects.filter(delivered_at__isnull=True, question__created_at__gt=now - RESPONSE_URL_LIFETIME),
        never_started=Q(lease_token__isnull=True, question__created_at__lt=now - dt.timedelta(minutes=1)),
        died=Q(lease_token__isnull=False) & lease_expired(),
    )
