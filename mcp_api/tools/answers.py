"""``ask`` and ``await_answer``: the only tools a question credential sees on ``/api/mcp``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from answers.models import Question
from answers.services import MAX_QUESTION, question_ask, question_await
from mcp_api.base import QUESTION, Args, Caller, Out, Tool, wait_allowed


class AskArgs(Args):
    question: str = Field(
        description="The question, in plain words", json_schema_extra={"minLength": 1, "maxLength": MAX_QUESTION}
    )


class AskOut(Out):
    question_id: int
    status: str


def ask(caller: Caller, args: AskArgs) -> AskOut:
    asker: Any = caller.principal
    question = question_ask(actor=asker, text=args.question)
    return AskOut(question_id=question.pk, status=question.status)


class AwaitArgs(Args):
    question_id: int
    wait_seconds: float = Field(10, ge=0, le=25, description="How long to wait for the answer")


class AnswerOut(Out):
    question_id: int
    status: str
    answer: str
    citations: list[str]
    refusal_reason: str
    refusal_pages: list[str] = Field(
        default_factory=list,
        description="When refused because several pages answer about equally well: those pages, to read",
    )


def await_answer(caller: Caller, args: AwaitArgs) -> AnswerOut:
    asker: Any = caller.principal  # a question credential's owner: a member or a service account
    question: Question = question_await(
        actor=asker, question_id=args.question_id, wait_seconds=wait_allowed(args.wait_seconds)
    )
    return AnswerOut(question_id=question.pk, status=question.status, answer=question.answer,
                     citations=list(question.citations), refusal_reason=question.refusal_reason,
                     refusal_pages=list(question.refusal_pages))  # fmt: skip


def _render_answer(out: AnswerOut) -> str:
    if out.status == "answered":
        return out.answer + "\n\nSources: " + ", ".join(out.citations)
    if out.status == "refused":
        return f"No answer: {out.refusal_reason}"
    if out.status == "failed":
        return f"The question failed: {out.refusal_reason}"
    return f"Still {out.status}: call await_answer again."


ANSWER_TOOLS: tuple[Tool, ...] = (
    Tool("ask", "File a question; answered under your credential's grants. Returns its id.", AskArgs, AskOut, ask,
         read_only=False, rate_class="ask", kinds=frozenset({QUESTION})),
    Tool("await_answer", "Wait (up to 25 s) for a question's answer, citations or refusal.", AwaitArgs, AnswerOut,
         await_answer, kinds=frozenset({QUESTION}), render=_render_answer),
)  # fmt: skip
