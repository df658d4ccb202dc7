"""Answering questions under the asker's grants, and refusing what cannot be grounded.

Retrieval runs first as the asker. With a model configured, a bounded investigation
follows (``search`` and ``read_page`` with the same visibility, at most ``LLM_MAX_STEPS``
model calls) and the model answers with page-path citations. Every cited path must be one
this question actually retrieved or read; an answer with no citation or any ungrounded
one is refused and never shown. Without a model, an extractive answerer picks the
best-supported sentences from the top chunks and cites their pages, and refuses when
nothing the asker can read supports an answer.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from answers.models import Question
from brain import embeddings, llm
from brain.domain import DATABASE_UNAVAILABLE
from brain.jobs import enqueue_on_commit, resend_lost
from brain.leases import lease_claim, lease_expired, lease_finish
from brain.text.secrets import refuse
from corpus.models import Page
from corpus.rendering import heading_anchors, rendered_text
from corpus.search import MAX_QUERY_CHARACTERS, SearchError, search
from corpus.selectors import page_read
from grants.models import Member, ServiceAccount

logger = logging.getLogger(__name__)

LEASE = dt.timedelta(minutes=5)
RETRIEVE_K = 8
MAX_QUESTION = MAX_QUERY_CHARACTERS  # what search takes: a longer question could never be answered
MIN_SUPPORT = 0.5  # without the embedder: share of the question's content words a sentence must hold
# The extractive answerer (measured with bench/answers.py on every judged set):
MIN_SIMILARITY = 0.45  # a sentence further from the question than this never answers it
COVERAGE_WEIGHT = 0.3  # how much holding the question's own words adds to meaning
ORDER_PENALTY = 0.06  # per place down the search results (measured: bench/answers.py)
SECOND_SENTENCE_WEIGHT = 0.3  # how much a page's second-best sentence adds to its claim
# A sentence is also embedded behind its page's title ("git-fetch-pack: This command …"), so
# "this command" or "it" is read in context; its similarity is the mean of the bare and the
# titled one (make bench-answers: citation precision +0.01 / 0 / +0.01 / +0.02 on the four
# judged sets, answered within 2 points; p50 ~0.25 s -> ~0.45 s; docs/answers.md).
TITLED_SHARE = 0.5
# An answer cites one page, so when two pages answer about equally well the pick is a coin toss:
# the cited page's claim must lead the next page's by CLAIM_MARGIN, unless its best sentence
# scores CLEAR_SCORE (measured: bench/answers.py; precision +0.02-0.05 a set for 5-10 % of answers).
CLAIM_MARGIN = 0.06
CLEAR_SCORE = 0.8
MAX_CONTENDERS = 3  # pages named in such a refusal (the reason is stored in 300 characters)
SENTENCE_MARGIN = 0.05  # sentences this close to the best one join it
MAX_SENTENCES = 3
SENTENCES_PER_CHUNK = 30
MAX_CANDIDATE_SENTENCES = 120  # embedded twice per question (bare and titled): ~0.5 s on two cores
EXTRACTIVE_NOTICE = (
    "(Quoted from the cited pages: no language model is configured, so this answer is extractive."
    " An administrator can set LLM_BASE_URL and LLM_MODEL for written answers.)"
)
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or our should the their there this to "
    "was we what when where which who why will with you your".split()
)
SYSTEM_PROMPT = (
    "You answer questions about an organisation's knowledge base. Use only the pages provided or found with the "
    'tools. Reply with JSON only: {"answer": "...", "citations": ["page/path.md#heading", ...]}. Cite the '
    "page path of every page your answer relies on. If the pages do not answer the question, reply with "
    '{"answer": "", "citations": []}.'
)
TOOLS = [
    {"type": "function", "function": {"name": "search", "description": "Search the pages you may read.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
    {"type": "function", "function": {"name": "read_page", "description": "Read one page by its path.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
]  # fmt: skip


class Refused(Exception):
    """The question gets no answer; the message is the reason shown to the asker."""

    def __init__(
        self, reason: str, *, steps: list[dict[str, Any]] | None = None, pages: list[str] | None = None
    ) -> None:
        super().__init__(reason)
        self.steps = steps or []
        self.pages = pages or []  # pages the asker can read that the reason points to


@dataclass
class Outcome:
    answer: str
    citations: list[str]
    mode: str
    retrieved: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)


class Anchors:
    """Where a citation of a section lands: the id the page's reader gives the chunk's heading
    chain (``corpus.rendering.heading_anchors``), each page read once per use.

    A slug of the last heading alone named no id for "Discounts > 12%", a reserved or repeated
    heading, or a table's first row, and the wrong section for two "Notes" under two teams.
    """

    def __init__(self) -> None:
        self.pages: dict[str, dict[str, str]] = {}

    def cite(self, path: str, heading_path: str) -> str:
        """``path`` with the anchor of ``heading_path`` on it, or bare when it has none."""
        anchor = self._of(path).get(heading_path)
        return f"{path}#{anchor}" if anchor else path

    def checked(self, citation: str) -> str:
        """A citation a model wrote, its anchor kept only when the page has that id."""
        path, _, anchor = citation.partition("#")
        return citation if anchor and anchor in self._of(path).values() else path

    def _of(self, path: str) -> dict[str, str]:
        if path not in self.pages:
            page = Page.objects.select_related("current_revision").filter(path=path).first()
            revision = page.current_revision if page is not None else None
            self.pages[path] = (
                heading_anchors(revision.body, page_path=path, title=page.title)
                if page is not None and revision is not None
                else {}
            )
        return self.pages[path]


def _stem(word: str) -> str:
    """A light suffix strip so "approves", "approved" and "approve" meet (no language model needed)."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


_LETTERS_BEYOND_ASCII = re.compile(r"[^\W\da-z_]+")
# Scripts written without spaces between words: their runs are read as character pairs.
_UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def _words(text: str) -> set[str]:
    """The content words of ``text``: ASCII words as always (lower-cased, stemmed, stopwords out);
    other alphabets' words of three letters or more; and runs of Chinese, Japanese, Korean or
    Thai as overlapping character pairs — a question in those had "no words to look for"."""
    lowered = unicodedata.normalize("NFKC", text).lower()
    words = {_stem(word) for word in re.findall(r"[a-z0-9]+", lowered) if len(word) > 2 and word not in STOPWORDS}
    for word in _LETTERS_BEYOND_ASCII.findall(lowered):
        for run in _UNSPACED.findall(word):
            words.update(run[index : index + 2] for index in range(max(len(run) - 1, 1)))
        rest = _UNSPACED.sub(" ", word).split()
        words.update(part for part in rest if len(part) > 2)
    return words


# A list item's or heading's marker at a line's start ("- ", "* ", "+ ", "1. ", "## "), only
# with its space: stripping "#*-" from both ends turned "-18 degrees" into "18 degrees".
_LINE_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)]|#{1,6})\s+")


def _sentences(body: str) -> list[str]:
    """Sentences of a chunk: Markdown soft-wrapped lines are joined first; headings and blank lines split."""
    sentences: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=#)", body):
        joined = " ".join(_LINE_MARKER.sub("", line).strip() for line in block.split("\n"))
        sentences.extend(part.strip() for part in re.split(r"(?<=[.!?])\s+", joined))
    return [sentence for sentence in sentences if len(sentence) >= 12]


def _grounded(citations: list[str], consulted: set[str]) -> list[str]:
    """The citations with their paths checked against what this question consulted; raises ``Refused``."""
    if not citations:
        raise Refused("the answer cited no page, so it cannot be checked")
    for citation in citations:
        path = citation.split("#", 1)[0]
        if path not in consulted:
            raise Refused(f"the answer cited {path!r}, which this question did not retrieve or read")
    return citations


@dataclass(frozen=True)
class Scored:
    """A sentence of a retrieved chunk, how close it is to the question and how well it ranks."""

    score: float
    order: int
    sentence: str
    citation: str
    similarity: float | None  # None when the embedder was unavailable
    position: int = 0  # its place among its chunk's sentences (the chunk is ``order``)


def scored_sentences(asker: Member | ServiceAccount, text: str) -> tuple[list[str], list[Scored]]:
    """(pages retrieved, every candidate sentence scored), best first: the extractive answerer's
    evidence before its floor is applied (``bench/answers.py`` measures floors on it)."""
    try:
        found = search(principal=asker, query=text, k=RETRIEVE_K).results
    except SearchError as exc:
        raise Refused(str(exc)) from exc
    wanted = _words(text)
    if not wanted:
        raise Refused("the question has no words to look for")
    candidates: list[tuple[int, int, str, str, str]] = []  # (order, place, sentence, citation, page title)
    anchors = Anchors()
    for order, result in enumerate(found):
        for place, sentence in enumerate(_sentences(result.body)[:SENTENCES_PER_CHUNK]):
            candidates.append((order, place, sentence, anchors.cite(result.path, result.heading_path), result.title))
    candidates = candidates[:MAX_CANDIDATE_SENTENCES]
    # Embedded together: the question, each sentence, then each titled sentence (an untitled
    # page's sentence is not embedded twice; its titled similarity is its bare one).
    texts = [text] + [sentence for _, _, sentence, _, _ in candidates]
    titled_at: list[int] = []
    for index, (_, _, sentence, _, title) in enumerate(candidates):
        if title:
            texts.append(f"{title}: {sentence}")
        titled_at.append(len(texts) - 1 if title else index + 1)
    try:
        vectors = embeddings.embed(texts) if candidates else None
    except embeddings.EmbeddingError:
        vectors = None
    scored: list[Scored] = []
    for index, (order, place, sentence, citation, _) in enumerate(candidates):
        coverage = len(wanted & _words(sentence)) / len(wanted)
        if vectors is None:
            scored.append(Scored(coverage, order, sentence, citation, None, place))
            continue
        bare = float(vectors[0] @ vectors[index + 1])
        titled = float(vectors[0] @ vectors[titled_at[index]])
        similarity = (1 - TITLED_SHARE) * bare + TITLED_SHARE * titled
        score = similarity + COVERAGE_WEIGHT * coverage - ORDER_PENALTY * order
        scored.append(Scored(score, order, sentence, citation, similarity, place))
    scored.sort(key=lambda item: (-item.score, item.order))
    return sorted({r.path for r in found}), scored


@dataclass(frozen=True)
class Choice:
    """What the extractive answerer picked: the answer's sentences (empty: refused) and, when it
    refused because pages tied, those pages (best first)."""

    sentences: list[Scored]
    contenders: list[str] = field(default_factory=list)


def extractive_choose(scored: list[Scored], *, floor: float, margin: float = CLAIM_MARGIN) -> Choice:
    """The sentences that answer, all from one page.

    A sentence may answer when it is at least ``floor`` similar to the question (without the
    embedder: holding ``MIN_SUPPORT`` of its words). Of the pages holding one, the page whose
    best sentence plus ``SECOND_SENTENCE_WEIGHT`` of its second-best scores highest is cited —
    two sentences agreeing on a page outweigh one lucky sentence elsewhere; one page cited, not
    three half-right ones (citation precision 0.56-0.60 → 0.61-0.74 on the judged sets). Its
    best eligible sentence and any within ``SENTENCE_MARGIN`` of it are the answer.

    With the embedder, the cited page must lead every other retrieved page by ``margin``
    (their claims computed alike) unless its best sentence scores ``CLEAR_SCORE``; otherwise
    nothing is chosen and the tied pages (at most ``MAX_CONTENDERS``) are the ``contenders``.
    A sentence next to a chosen one in its chunk that may answer too joins it (at most
    ``MAX_SENTENCES`` in all), and the answer quotes them in the page's order.
    """
    eligible = [s for s in scored if (s.similarity >= floor if s.similarity is not None else s.score >= MIN_SUPPORT)]
    if not eligible:
        return Choice([])
    candidates = {_page_of(s.citation) for s in eligible}
    by_page: dict[str, list[float]] = {}
    for sentence in scored:  # best first
        page = _page_of(sentence.citation)
        if len(by_page.setdefault(page, [])) < 2:
            by_page[page].append(sentence.score)

    def claim(page: str) -> float:
        best, *rest = by_page[page]
        return best + SECOND_SENTENCE_WEIGHT * (rest[0] if rest else 0.0)

    chosen_page = max((page for page in by_page if page in candidates), key=claim)  # best first on ties
    on_page = [s for s in eligible if _page_of(s.citation) == chosen_page]
    if on_page[0].similarity is not None and on_page[0].score < CLEAR_SCORE:
        tied = [page for page in by_page if page != chosen_page and claim(page) > claim(chosen_page) - margin]
        if tied:
            return Choice([], contenders=[chosen_page, *sorted(tied, key=claim, reverse=True)][:MAX_CONTENDERS])
    chosen = [s for s in on_page[:MAX_SENTENCES] if s.score >= on_page[0].score - SENTENCE_MARGIN]
    # The sentence right after (or before) a chosen one in its chunk goes with it when it may
    # answer too: "Managers approve up to 12%." is half of what "Anything above 12% goes to the
    # commercial lead." completes, and quoting a passage reads better than a lone line.
    for sentence in on_page:
        if len(chosen) >= MAX_SENTENCES:
            break
        if sentence not in chosen and any(
            sentence.order == kept.order and abs(sentence.position - kept.position) == 1 for kept in chosen
        ):
            chosen.append(sentence)
    return Choice(sorted(chosen, key=lambda s: (s.order, s.position)))


def _page_of(citation: str) -> str:
    return citation.split("#", 1)[0]


def extractive(asker: Member | ServiceAccount, text: str) -> Outcome:
    """Answer with the sentences of the top chunks the asker can read that say what was asked.

    Sentences are chosen by meaning (each is embedded, bare and behind its page's title, and
    compared with the question) and by coverage (the share of the question's content words it
    holds), within the chunks search found; a question whose best sentence is not close enough is refused, and so is one that
    several pages answer about equally well (the refusal names them). The answer says it
    is quoted and which setting gives a written one. Without the embedder, coverage alone
    decides (at least ``MIN_SUPPORT`` of the question's words).
    """
    retrieved, scored = scored_sentences(asker, text)
    choice = extractive_choose(scored, floor=MIN_SIMILARITY)
    if choice.contenders:
        raise Refused(
            f"several pages answer this about equally well: {', '.join(choice.contenders)}. "
            "Read them, or ask more precisely.",
            pages=choice.contenders,
        )
    best = choice.sentences
    if not best:
        raise Refused("nothing you can read answers this question")
    # Cited best first; quoted in the page's order.
    citations = list(dict.fromkeys(item.citation for item in sorted(best, key=lambda item: -item.score)))
    # Quoted as a reader of the page sees it: "[price list](pricing/price-list.md)" was shown as
    # Markdown source, on the web, in Slack and to agents.
    answer = " ".join(
        dict.fromkeys(
            " ".join(rendered_text(item.sentence, page_path=_page_of(item.citation)).split()) for item in best
        )
    )
    return Outcome(
        answer=f"{answer}\n\n{EXTRACTIVE_NOTICE}", citations=citations, mode="extractive", retrieved=retrieved
    )


def investigate(asker: Member | ServiceAccount, text: str, budget: llm.Budget | None = None) -> Outcome:
    """Retrieval, then a bounded tool loop with the model; the answer's citations are checked."""
    budget = budget or llm.default_budget()
    try:
        found = search(principal=asker, query=text, k=RETRIEVE_K).results
    except SearchError as exc:
        raise Refused(str(exc)) from exc
    consulted = {result.path for result in found}
    anchors = Anchors()
    context = "\n\n".join(f"[{anchors.cite(r.path, r.heading_path)}]\n{r.body}" for r in found) or "(no pages found)"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Question: {text}\n\nPages:\n{context}"},
    ]
    steps: list[dict[str, Any]] = []
    while True:
        try:
            reply = llm.chat(messages, tools=TOOLS, budget=budget)
        except llm.BudgetExhausted as exc:
            raise Refused(f"the investigation stopped: {exc}", steps=steps) from exc
        if not reply.tool_calls:
            break
        messages.append({"role": "assistant", "content": reply.content or None, "tool_calls": [
            {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
            for call in reply.tool_calls
        ]})  # fmt: skip
        for call in reply.tool_calls:
            steps.append({"tool": call["name"], "arguments": call["arguments"]})
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": _run_tool(asker, call, consulted, anchors)})  # fmt: skip
    try:
        parsed = json.loads(reply.content)
        answer, citations = str(parsed["answer"]).strip(), [str(c) for c in parsed["citations"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise Refused("the model's answer was not in the expected form", steps=steps) from exc
    if not answer:
        raise Refused("nothing you can read answers this question", steps=steps)
    try:
        grounded = _grounded(citations, consulted)
    except Refused as refusal:
        raise Refused(str(refusal), steps=steps) from refusal
    # A section the page does not have (a model's invention) is cited as the page alone.
    grounded = list(dict.fromkeys(anchors.checked(citation) for citation in grounded))
    return Outcome(answer=answer, citations=grounded, mode="model", retrieved=sorted(consulted), steps=steps)


def _run_tool(asker: Member | ServiceAccount, call: dict[str, Any], consulted: set[str], anchors: Anchors) -> str:
    """A tool the model called, run as the asker; what it returned is added to ``consulted``."""
    arguments = call["arguments"] if isinstance(call["arguments"], dict) else {}
    if call["name"] == "search":
        try:
            results = search(principal=asker, query=str(arguments.get("query", "")), k=RETRIEVE_K).results
        except SearchError as exc:
            return f"error: {exc}"
        consulted.update(result.path for result in results)
        return "\n\n".join(f"[{anchors.cite(r.path, r.heading_path)}]\n{r.body}" for r in results) or "no results"
    if call["name"] == "read_page":
        path = str(arguments.get("path", ""))
        try:
            page = page_read(principal=asker, path=path)
        except Page.DoesNotExist:
            return "not found"
        consulted.add(page.path)
        return f"[{page.path}] {page.title}\n\n{page.body}"
    return "unknown tool"


# --------------------------------------------------------------------------- questions


def question_ask(*, actor: Member | ServiceAccount, text: str, enqueue: bool = True) -> Question:
    """File a question (answered by a worker, under ``actor``'s grants); ``ValidationError`` for a bad one."""
    clean = (text or "").strip()
    if not clean:
        raise ValidationError({"text": "ask a question"})
    if len(clean) > MAX_QUESTION:
        raise ValidationError({"text": f"a question may be at most {MAX_QUESTION} characters"})
    refuse(clean, field="question")
    with transaction.atomic():
        if isinstance(actor, ServiceAccount):
            question = Question.objects.create(service_asker=actor, text=clean)
        else:
            question = Question.objects.create(asker=actor, text=clean)
        if enqueue:
            enqueue_on_commit("answers.run", question.pk)
    return question


def question_run(question_id: int) -> str:
    """Answer or refuse one question (leased; a finished one is left alone)."""
    lease = lease_claim(
        Question, question_id, waiting=Q(status=Question.Status.QUEUED), running=Q(status=Question.Status.RUNNING),
        take={"status": Question.Status.RUNNING}, duration=LEASE,
    )  # fmt: skip
    if lease is None:  # finished, gone, or a live worker holds it
        return "skipped"
    question = Question.objects.select_related("asker__user", "service_asker").get(pk=question_id)
    started = time.monotonic()
    fields: dict[str, Any]
    try:
        asker = question.principal
        outcome = investigate(asker, question.text) if llm.configured() else extractive(asker, question.text)
        fields = {"status": Question.Status.ANSWERED, "answer": outcome.answer, "citations": outcome.citations,
                  "mode": outcome.mode, "retrieved": outcome.retrieved, "steps": outcome.steps}  # fmt: skip
    except Refused as refusal:
        fields = {"status": Question.Status.REFUSED, "refusal_reason": str(refusal)[:300], "steps": refusal.steps,
                  "refusal_pages": refusal.pages, "mode": "model" if llm.configured() else "extractive"}  # fmt: skip
    except llm.LLMError as failure:
        fields = {"status": Question.Status.FAILED, "refusal_reason": str(failure)[:300], "mode": "model"}
    except DATABASE_UNAVAILABLE:
        raise  # the database is away: the lease expires and the sweep asks again, rightly
    except Exception:
        # Anything else fails the same way on every retry: the question ends as failed, once,
        # instead of "running" for ever while the sweep re-sends it.
        logger.exception("question %s could not be answered", question_id)
        fields = {"status": Question.Status.FAILED, "refusal_reason": "Brain could not answer this (an internal error); ask again later.",
                  "mode": "model" if llm.configured() else "extractive"}  # fmt: skip
    fields.update(finished_at=timezone.now(), duration_ms=int((time.monotonic() - started) * 1000))
    # Only while this run holds the lease: a run that outlived it, and was taken over, must
    # not overwrite the answer the other run gives.
    if not lease_finish(lease, **fields):
        return "lease-lost"
    return str(fields["status"])


def questions_sweep() -> int:
    """Re-enqueue questions running past their lease (a killed worker) and, when the queue is
    idle, those still queued after a minute (a message that was never sent)."""
    now = timezone.now()
    return resend_lost(
        "answers.run",
        Question.objects.all(),
        died=Q(status=Question.Status.RUNNING) & lease_expired(),
        never_started=Q(status=Question.Status.QUEUED, created_at__lt=now - dt.timedelta(minutes=1)),
    )


TERMINAL = (Question.Status.ANSWERED, Question.Status.REFUSED, Question.Status.FAILED)


WITHDRAWN = (
    "This answer cited a page you can no longer read, so it is not shown. Ask again: the new answer "
    "will come from what you can read now."
)


def as_readable_now(question: Question, asker: Member | ServiceAccount) -> Question:
    """``question`` as its asker may see it today: an answer (or a refusal naming pages) that
    rests on a page they have since lost is withdrawn — its text, citations and named pages —
    rather than served from what was stored when they could read it. Nothing is written."""
    cited = {citation.split("#", 1)[0] for citation in question.citations or []} | set(question.refusal_pages or [])
    if not cited:
        return question
    readable = set(Page.objects.visible_to(asker, "read").filter(path__in=cited).values_list("path", flat=True))
    if cited <= readable:
        return question
    question.answer, question.citations, question.refusal_pages = WITHDRAWN, [], []
    question.refusal_reason = question.refusal_reason and WITHDRAWN
    return question


def question_await(*, actor: Member | ServiceAccount, question_id: int, wait_seconds: float = 10.0) -> Question:
    """The question once it is finished, or as it stands after ``wait_seconds`` (at most 25),
    as the asker may see it now (``as_readable_now``).

    Only its asker sees it: anyone else gets ``Question.DoesNotExist``, as for a missing id.
    """
    owner = {"service_asker": actor} if isinstance(actor, ServiceAccount) else {"asker": actor}
    deadline = time.monotonic() + max(0.0, min(float(wait_seconds), 25.0))
    while True:
        question = Question.objects.get(pk=question_id, **owner)
        if question.status in TERMINAL or time.monotonic() >= deadline:
            return as_readable_now(question, actor)
        time.sleep(0.25)
