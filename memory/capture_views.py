"""Capture from the browser: the page a bookmarklet opens, and the bookmarklet itself.

``GET /memory/capture?url=&title=&selection=`` shows a small form prefilled with what the
bookmarklet read from the page; the person checks it and saves (a POST with the CSRF token),
which calls ``memory_remember`` with ``source="browser"``. Nothing is stored without that
click: a page can make the bookmarklet send anything, and any site can open this URL, so the
person's own confirmation on the brain's own (unframeable) page is what makes a capture.

The bookmarklet never holds a token: the popup is a top-level window of the brain, so the
person's session cookie (``SameSite=Lax`` travels with a top-level GET) signs them in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponseBase, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import MAX_URL_LENGTH
from django.views.decorators.http import require_http_methods

from brain.inputs import typed_back
from brain.text.secrets import NulRefused, SecretRefused
from grants.decorators import limited_view
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.models import Workspace
from memory.recall import memory_get
from memory.services import capture_defaults, memory_remember
from memory.views import member_view

SOURCE = "browser"
MAX_URL = 2_000
MAX_TITLE = 300
MAX_TEXT = 16_000  # the memory itself may hold 20,000: room for the title and URL lines
MAX_TAGS = 2_000
# The bookmarklet carries the selection in the query string, so it is cut twice: to this many
# characters, and so that the whole URL stays within BOOKMARKLET_URL_BUDGET. gunicorn (the
# Procfile) refuses a request line over 4,094 bytes, and percent-encoding triples every
# non-ASCII byte, so characters alone would not keep a long non-Latin selection under it.
BOOKMARKLET_SELECTION = 4_000
BOOKMARKLET_URL_BUDGET = 3_800
# The query string may not hold a control character (``brain.inputs.HostileInputMiddleware``
# answers 400), so the bookmarklet sends line breaks as U+2028 LINE SEPARATOR; the form turns
# them back into line breaks.
LINE_SEPARATOR = "\u2028"
OUTCOMES = {"stored", "flagged", "duplicate"}


@dataclass(frozen=True)
class CaptureInput:
    """What the capture form holds: the page's URL and title, the text, tags and the layer."""

    url: str
    title: str
    text: str
    tags: str
    workspace: str

    def tag_list(self) -> list[str]:
        return [tag for tag in self.tags.split(",") if tag.strip()]


def read_capture(data: QueryDict, *, default_workspace: str) -> CaptureInput:
    """The form's fields from a query string or a POST body, as typed (nothing validated yet)."""
    return CaptureInput(
        url=data.get("url", "").strip(),
        title=" ".join(data.get("title", "").split()),  # one line: it is a heading, not text
        # Browsers submit a textarea's line breaks as CRLF; the memory keeps plain LF.
        text=data.get("selection", "").replace("\r\n", "\n").replace("\r", "\n").replace(LINE_SEPARATOR, "\n"),
        tags=data.get("tags", ""),
        workspace=data.get("workspace") or default_workspace,
    )


def validate_capture(typed: CaptureInput) -> None:
    """``MemoryInvalid`` naming the first field that is wrong: a length, the URL's scheme, the layer.

    The URL must be an ``http`` or ``https`` address with a host: it is stored as a reference
    a person will follow, so ``javascript:``, ``data:`` or ``file:`` addresses are refused.
    Content, tags and secrets are checked by ``memory_remember`` itself.
    """
    if len(typed.url) > MAX_URL:
        raise MemoryInvalid(f"url may be at most {MAX_URL} characters")
    if typed.url:
        try:
            parts = urlsplit(typed.url)
        except ValueError:  # a bracketed host that is no IPv6 address ("http://[fe80::1")
            raise MemoryInvalid("url must be an http:// or https:// address") from None
        if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in typed.url):
            raise MemoryInvalid("url must be an http:// or https:// address")
    if len(typed.title) > MAX_TITLE:
        raise MemoryInvalid(f"title may be at most {MAX_TITLE} characters")
    if len(typed.text) > MAX_TEXT:
        raise MemoryInvalid(f"the selected text or note may be at most {MAX_TEXT} characters")
    if len(typed.tags) > MAX_TAGS:
        raise MemoryInvalid(f"tags may be at most {MAX_TAGS} characters in all")
    if typed.workspace not in Workspace.values:
        raise MemoryInvalid('workspace must be "personal" or "company"')
    if not (typed.text.strip() or typed.title or typed.url):
        raise MemoryInvalid("select some text on the page or write a note")


def capture_content(typed: CaptureInput) -> str:
    """The memory's text: the selection (or note), then the title and the URL on their own lines."""
    reference = "\n".join(line for line in (typed.title, typed.url) if line)
    return "\n\n".join(part for part in (typed.text.strip(), reference) if part)


def bookmarklet(capture_url: str) -> str:
    """A ``javascript:`` URL that opens ``capture_url`` in a small popup with the page's URL,
    title and selection.

    It runs in the page the person is reading, so it reads only ``location.href``,
    ``document.title`` and ``window.getSelection()``, holds no credential, and sends
    nothing: the brain's page asks the person before anything is stored. Line breaks
    become U+2028 (see ``LINE_SEPARATOR``); the URL is kept within
    ``BOOKMARKLET_URL_BUDGET`` by cutting the selection first, then the title (each cut
    ends in "…"). A blocked popup falls back to opening the page in the same tab.
    """
    script = f"""(function () {{
  var base = {json.dumps(capture_url)}, budget = {BOOKMARKLET_URL_BUDGET}, most = {BOOKMARKLET_SELECTION};
  var enc = encodeURIComponent;
  function clean(value, lines) {{
    var text = String(value || "").replace(/\\r\\n?/g, "\\n").replace(/\\t/g, " ");
    text = text.replace(/\\n/g, lines ? "\\u2028" : " ").replace(/[\\u0000-\\u001f\\u007f]/g, "");
    return text.toWellFormed ? text.toWellFormed() : text;
  }}
  function cut(text, n) {{ return text.slice(0, n).replace(/[\\ud800-\\udbff]$/, ""); }}
  function fit(text, room) {{
    if (enc(text).length <= room) return text;
    var low = 0, high = text.length;
    while (low < high) {{
      var mid = (low + high + 1) >> 1;
      if (enc(cut(text, mid)).length + 9 <= room) low = mid; else high = mid - 1;
    }}
    return low ? cut(text, low) + "\\u2026" : "";
  }}
  var page = clean(location.href, false), title = clean(document.title, false);
  var picked = clean(window.getSelection ? window.getSelection() : "", true);
  if (picked.length > most) picked = cut(picked, most - 1) + "\\u2026";
  var room = budget - base.length - 23;
  if (enc(page).length > room / 2) page = cut(page.split("#")[0], 1000);
  room -= enc(page).length;
  title = fit(cut(title, {MAX_TITLE}), Math.min(room, 900));
  room -= enc(title).length;
  var href = base + "?url=" + enc(page) + "&title=" + enc(title) + "&selection=" + enc(fit(picked, room));
  var opened = window.open(href, "brain-capture", "popup,width=620,height=720");
  if (!opened) location.href = href;
}})();"""
    compact = " ".join(line.strip() for line in script.splitlines())
    # A javascript: URL is percent-decoded before it runs: encode every '%' (and anything a
    # bookmark bar might mangle), keep the punctuation JavaScript needs readable.
    return "javascript:" + quote(compact, safe="()[]{};,.=!'*:/?&+<>|$@~-_\"")


def bookmarklet_for(request: HttpRequest) -> str:
    """The bookmarklet pointing at this brain's capture page, as the request reached it."""
    return bookmarklet(request.build_absolute_uri(reverse("memory:capture")))


def _form(
    request: HttpRequest, member: Member, typed: CaptureInput, *, error: str = "", status: int = 200
) -> HttpResponseBase:
    context: dict[str, Any] = {
        "typed": typed,
        "error": error,
        "default_tags": capture_defaults(member).tags,
        "bookmarklet": bookmarklet_for(request),
        "limits": {"url": MAX_URL, "title": MAX_TITLE, "text": MAX_TEXT, "tags": MAX_TAGS},
    }
    return render(request, "memory/capture.html", context, status=status)


def resume_url(data: QueryDict) -> str:
    """This page's address carrying the capture in ``data``, short enough to survive signing in.

    Django's sign-in drops a ``next`` longer than ``MAX_URL_LENGTH`` (2,048 characters), and
    a bookmarklet's address may be longer: the text is cut (ending in "…") until it fits,
    and if the URL and title alone are too long, the bare capture page is the way back. Line
    breaks travel as U+2028 again (the query string may not hold a control character).
    """
    path = reverse("memory:capture")
    typed = read_capture(data, default_workspace="")
    fields = {"url": typed.url, "title": typed.title, "tags": typed.tags, "workspace": data.get("workspace", "")}

    def address(text: str) -> str:
        query = {**fields, "selection": text.replace("\n", LINE_SEPARATOR)}
        kept = {name: value for name, value in query.items() if value}
        return f"{path}?{urlencode(kept)}" if kept else path

    if len(address(typed.text)) <= MAX_URL_LENGTH:
        return address(typed.text)
    low, high = 0, len(typed.text)
    while low < high:  # the longest prefix of the text that fits, with its "…"
        middle = (low + high + 1) // 2
        if len(address(typed.text[:middle] + "…")) <= MAX_URL_LENGTH:
            low = middle
        else:
            high = middle - 1
    shortened = address(typed.text[:low] + "…" if low else "")
    return shortened if len(shortened) <= MAX_URL_LENGTH else path


@require_http_methods(["GET", "POST"])
def capture(request: HttpRequest) -> HttpResponseBase:
    """The capture page; someone signed out is sent to sign in first, the capture kept (``resume_url``).

    A form posted after the session expired is kept the same way, so the text is not lost.
    """
    if not request.user.is_authenticated:
        return redirect_to_login(resume_url(request.POST if request.method == "POST" else request.GET))
    return _capture(request)


@limited_view("write")
@member_view
def _capture(request: HttpRequest, member: Member) -> HttpResponseBase:
    """The capture form (GET, prefilled from the query string), saving it (POST), and the result.

    A save redirects to ``?saved=<id>&outcome=<outcome>`` (post, redirect, get: a reload
    stores nothing twice), which shows "Saved" or "Already remembered" with a link to the
    memory — a memory the person cannot see is a 404, like a missing one. A refused input
    re-shows the form with the message and what was typed, except a field holding a refused
    secret: that is never echoed back, so that field is emptied.
    """
    defaults = capture_defaults(member)
    if request.method == "GET" and request.GET.get("saved"):
        memory = memory_get(actor=member, memory_id=request.GET["saved"])
        outcome = request.GET.get("outcome", "stored")
        context = {"memory": memory, "outcome": outcome if outcome in OUTCOMES else "stored"}
        return render(request, "memory/capture.html", context)
    typed = read_capture(
        request.POST if request.method == "POST" else request.GET, default_workspace=defaults.workspace
    )
    if request.method == "GET":
        return _form(request, member, typed)
    try:
        validate_capture(typed)
        result = memory_remember(
            actor=member, content=capture_content(typed), tags=typed.tag_list(),
            workspace=typed.workspace, source=SOURCE,
        )  # fmt: skip
    except MemoryInvalid as invalid:
        return _form(request, member, typed, error=str(invalid), status=400)
    except (SecretRefused, NulRefused) as refusal:
        # Only a field holding what was refused is emptied (``typed_back``): the URL, title and
        # tags beside a pasted key were lost with it.
        shown = typed_back({"url": typed.url, "title": typed.title, "text": typed.text, "tags": typed.tags})
        kept = CaptureInput(url=shown.get("url", ""), title=shown.get("title", ""), text=shown.get("text", ""),
                            tags=shown.get("tags", ""), workspace=typed.workspace)  # fmt: skip
        return _form(request, member, kept, error=str(refusal), status=400)
    query = urlencode({"saved": str(result.memory.pk), "outcome": result.outcome})
    return redirect(f"{reverse('memory:capture')}?{query}")
