"""Model verdicts on a new memory and its closest neighbour: duplicate or contradiction.

Capture (``memory_remember``) never guesses: without a model a near-duplicate is only
flagged. With a model configured (``brain.llm``) and ``BRAIN_MEMORY_MODEL_VERDICTS`` on,
a capture whose closest neighbour in the same layer is similar enough queues
``memory.settle`` (ids only), and this module asks the model which of these holds and
applies it through the one write path (``apply_duplicate_verdict``):

- ``merge``: the new memory adds detail to the old one → appended to it;
- ``replace``: the new memory restates the old one → its text takes the old row's place;
- ``contradiction``: they disagree about the same thing → the newer wins, the old one is
  deprecated with a ``supersedes`` link (a protected old memory wins instead);
- ``keep_both``: different things, or both stand → the flag is cleared.

Which verdicts are open depends on the pair: ``merge``/``replace`` rewrite the old
memory's text, so they need a flagged near-duplicate (similarity ≥ 0.85) by the same
author; a merely related neighbour (≥ 0.78), or another member's shared memory, can
only be judged a contradiction or left alone. Anything the model says outside the open
verdicts, or a reply that is not the JSON asked for, changes nothing. Text sent to the
model is masked by the gateway's secret detector.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from django.conf import settings
from django.db import transaction

from brain import llm
from memory.models import Memory, Status, Workspace
from memory.services import AUTO_LINK, DUPLICATE_FLAG, DUPLICATE_TAG, apply_duplicate_verdict

logger = logging.getLogger(__name__)

VERDICTS = ("merge", "replace", "contradiction", "keep_both")
# One call, a short JSON answer: the budget is a cap, not an expectation.
VERDICT_TOKENS = 800

SYSTEM_PROMPT = """You keep a team's memory tidy. You are shown an OLD note and a NEW note
from the same layer of the memory. Decide how they relate and reply with one JSON object
and nothing else: {"verdict": "<one of: VERDICTS>", "reason": "<one short sentence>"}.

- merge: both are about the same thing and NEW adds detail that OLD lacks.
- replace: NEW says what OLD says, in other words; NEW should take its place.
- contradiction: both are about the same thing and state incompatible facts (NEW is more recent).
- keep_both: they are about different things, or both can be true at once.

Only the verdicts listed above are allowed. When unsure, answer keep_both."""


def enabled() -> bool:
    """A model is configured and verdicts are not switched off."""
    return bool(settings.BRAIN_MEMORY_MODEL_VERDICTS) and llm.configured()


def open_verdicts(new: Memory, old: Memory, similarity: float) -> tuple[str, ...]:
    """The verdicts the model may return for this pair (empty: do not ask).

    Only a pair in one layer is judged: the shared layer, or one person's own. Two personal
    memories of different people share the workspace *value* but no layer — a pair queued
    while both were shared and un-shared before its job ran must not send a colleague's
    private text to the model (nor tag the author's memory after it)."""
    same_layer = new.workspace == old.workspace and (
        new.workspace == Workspace.COMPANY or new.author_id == old.author_id
    )
    if similarity < AUTO_LINK or not same_layer or old.status == Status.DEPRECATED:
        return ()
    if similarity >= DUPLICATE_FLAG and new.author_id == old.author_id:
        return VERDICTS
    return ("contradiction", "keep_both")


def parse_verdict(reply: str, allowed: tuple[str, ...]) -> str | None:
    """The verdict in the model's reply if it is one of ``allowed``, else None."""
    match = re.search(r"\{.*\}", reply, re.DOTALL)
    if match is None:
        return None
    try:
        data: Any = json.loads(match.group(0))
    except ValueError:
        return None
    verdict = data.get("verdict") if isinstance(data, dict) else None
    return verdict if isinstance(verdict, str) and verdict in allowed else None


def ask(new: Memory, old: Memory, allowed: tuple[str, ...]) -> str | None:
    """One model call. Returns the verdict, or None when the reply holds no allowed one.

    Raises ``llm.LLMError`` when the model cannot be reached (the task retries).
    """
    prompt = SYSTEM_PROMPT.replace("<one of: VERDICTS>", "|".join(allowed))
    prompt = "\n".join(line for line in prompt.splitlines() if not _closed_line(line, allowed))
    messages = [
        {"role": "system", "content": prompt},
        {
            "role": "user",
            "content": f"OLD (written {old.created_at.date().isoformat()}):\n{old.content}\n\n"
            f"NEW (written {new.created_at.date().isoformat()}):\n{new.content}",
        },
    ]
    reply = llm.chat(messages, budget=llm.Budget(steps=1, tokens=VERDICT_TOKENS))
    return parse_verdict(reply.content, allowed)


def _closed_line(line: str, allowed: tuple[str, ...]) -> bool:
    """A verdict's explanation line, for a verdict that is not open (so the model never sees it)."""
    return any(line.startswith(f"- {verdict}:") for verdict in VERDICTS if verdict not in allowed)


def memory_settle(*, new_id: Any, old_id: Any, similarity: float) -> str:
    """Ask the model about a captured memory and its neighbour and apply the verdict.

    Idempotent and safe to run late: if either memory is gone, was moved to another layer,
    or the old one was deprecated meanwhile, nothing happens. Returns what was done
    (``skipped``, ``no-verdict`` or the verdict applied). Raises ``llm.LLMError`` when the
    model is unreachable. (``memory.verdict_jobs`` runs the two halves, ``memory_judge`` and
    ``verdict_apply``, around its lease.)
    """
    verdict = memory_judge(new_id=new_id, old_id=old_id, similarity=similarity)
    if verdict not in VERDICTS:
        return verdict
    return verdict_apply(new_id=new_id, old_id=old_id, similarity=similarity, verdict=verdict)


def memory_judge(*, new_id: Any, old_id: Any, similarity: float) -> str:
    """The model's verdict on the pair as it is now: one of ``VERDICTS``, or ``skipped`` (no
    model, a memory gone, nothing open to judge) or ``no-verdict`` (the reply held none).

    Reads only; holds no lock while the model thinks. Raises ``llm.LLMError`` when the
    model is unreachable.
    """
    if not enabled():
        return "skipped"
    new, old = _pair(Memory.objects.all(), new_id, old_id)
    if new is None or old is None:
        return "skipped"
    allowed = open_verdicts(new, old, similarity)
    if not allowed:
        return "skipped"
    verdict = ask(new, old, allowed)
    if verdict is None:
        logger.info("memory verdict: the model gave none of %s", ",".join(allowed))
        return "no-verdict"
    return verdict


def verdict_apply(*, new_id: Any, old_id: Any, similarity: float, verdict: str) -> str:
    """Apply ``verdict`` to the pair if it is still open for the pair as it is now; returns the
    verdict, or ``skipped`` when the pair changed so that it no longer applies.

    Both memories are locked and judged again first, so applying twice changes nothing the
    second time: a contradiction deprecated the old memory, a merge or replace removed the
    new one, a ``keep_both`` cleared the flag. (Against a canonical old memory a repeated
    contradiction would count its win twice: the verdict job's lease token rules that out.)
    Runs in its own transaction, or inside the caller's.
    """
    with transaction.atomic():
        new, old = _pair(Memory.objects.select_for_update(), new_id, old_id)
        if new is None or old is None or verdict not in open_verdicts(new, old, similarity):
            return "skipped"
        if verdict == "keep_both" and DUPLICATE_TAG not in new.tags:
            return verdict  # nothing to clear
        apply_duplicate_verdict(actor=new.author, new=new, old=old, verdict=verdict)
    logger.info("memory verdict applied: %s", verdict)
    return verdict


def _pair(memories: Any, new_id: Any, old_id: Any) -> tuple[Memory | None, Memory | None]:
    found = {str(memory.pk): memory for memory in memories.filter(pk__in=[new_id, old_id]).order_by("pk")}
    return found.get(str(new_id)), found.get(str(old_id))
