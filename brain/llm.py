"""The model gateway: every call to a language model goes through here.

An OpenAI-compatible chat-completions client (hosted APIs, vLLM, llama.cpp, Ollama) with
tool calling, configured by ``LLM_BASE_URL`` / ``LLM_API_KEY`` / ``LLM_MODEL``. Every
message is passed through the secret detector's ``mask()`` before it leaves; one log line
per call carries the model, token counts and latency, never content. Budgets are the
caller's (``Budget``): a step and a token allowance per question.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import requests
from django.conf import settings

from brain.text.secrets import mask

logger = logging.getLogger(__name__)


class LLMError(Exception):
    """The model could not be reached or answered nonsense; the message names which, never the URL."""


class BudgetExhausted(LLMError):
    """The question used its allowance of steps or tokens."""


@dataclass
class Budget:
    steps: int
    tokens: int
    used_steps: int = 0
    used_tokens: int = 0

    def spend(self, tokens: int) -> None:
        self.used_steps += 1
        self.used_tokens += tokens

    def check(self) -> None:
        if self.used_steps >= self.steps:
            raise BudgetExhausted(f"the step budget ({self.steps}) is spent")
        if self.used_tokens >= self.tokens:
            raise BudgetExhausted(f"the token budget ({self.tokens}) is spent")


@dataclass
class Reply:
    content: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "arguments": dict}


def configured() -> bool:
    return bool(settings.LLM["BASE_URL"] and settings.LLM["MODEL"])


def default_budget() -> Budget:
    return Budget(steps=int(settings.LLM["MAX_STEPS"]), tokens=int(settings.LLM["MAX_TOKENS"]))


def _masked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        copy = dict(message)
        if isinstance(copy.get("content"), str):
            copy["content"] = mask(copy["content"])[0]
        out.append(copy)
    return out


def chat(messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None, budget: Budget) -> Reply:
    """One chat completion. Raises ``BudgetExhausted`` before calling past the budget, ``LLMError`` on failure."""
    if not configured():
        raise LLMError("no model is configured")
    budget.check()
    url = str(settings.LLM["BASE_URL"]).rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    if settings.LLM["API_KEY"]:
        headers["Authorization"] = f"Bearer {settings.LLM['API_KEY']}"
    body: dict[str, Any] = {
        "model": settings.LLM["MODEL"],
        "messages": _masked(messages),
        "max_tokens": max(1, budget.tokens - budget.used_tokens),
        "temperature": 0,
    }
    if tools:
        body["tools"] = tools
    started = time.monotonic()
    try:
        response = requests.post(url, json=body, headers=headers, timeout=settings.LLM["TIMEOUT"])
        response.raise_for_status()
        data = response.json()
        choice = data["choices"][0]["message"]
        usage = data.get("usage") or {}
    except (requests.RequestException, KeyError, IndexError, TypeError, ValueError) as exc:
        logger.warning("llm call failed: %s", type(exc).__name__)
        raise LLMError(f"the model call failed ({type(exc).__name__})") from None
    tokens = int(usage.get("total_tokens") or usage.get("completion_tokens") or 0)
    budget.spend(tokens)
    logger.info(
        "llm call",
        extra={
            "model": settings.LLM["MODEL"],
            "tokens": tokens,
            "latency_ms": int((time.monotonic() - started) * 1000),
        },
    )
    calls = []
    for call in choice.get("tool_calls") or []:
        try:
            arguments = json.loads(call["function"].get("arguments") or "{}")
        except (KeyError, ValueError, TypeError):
            arguments = {}
        calls.append(
            {"id": call.get("id", ""), "name": call.get("function", {}).get("name", ""), "arguments": arguments}
        )
    return Reply(content=str(choice.get("content") or ""), tool_calls=calls)
