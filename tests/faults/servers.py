"""Fake model servers for fault tests: real local HTTP servers that can hold a request.

A held request is the moment a test kills a worker: the job has claimed its lease and is
waiting on a model across the network — the longest stretch of any job, and the one a
crash is most likely to hit. As in ``tests/fakes.py``, only what sits across a network we
do not own (a chat model, an embedding endpoint) is faked.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Collection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from django.test import override_settings

from brain.embeddings import DIMENSIONS

Reply = Callable[[dict[str, Any], int], dict[str, Any]]


class HoldingServer:
    """Answers each JSON POST with ``reply(body, n)`` (``n`` counts requests from 1). Requests
    whose number is in ``hold`` wait until ``release()`` (or 60 s); ``held`` is set when the
    first of them arrives. A reply to a client that died meanwhile is dropped quietly."""

    def __init__(self, reply: Reply, *, hold: Collection[int] = ()) -> None:
        self.requests: list[dict[str, Any]] = []
        self.held = threading.Event()
        self._released = threading.Event()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    owner.requests.append(body)
                    number = len(owner.requests)
                if number in hold:
                    owner.held.set()
                    owner._released.wait(timeout=60)
                payload = json.dumps(reply(body, number)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    return  # the worker that asked was killed

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


def chat(reply: Callable[[dict[str, Any], int], dict[str, Any]]) -> Reply:
    """An OpenAI chat-completions reply around ``reply``'s assistant message."""

    def respond(body: dict[str, Any], number: int) -> dict[str, Any]:
        return {"choices": [{"message": reply(body, number)}], "usage": {"total_tokens": 50}}

    return respond


def fake_vector(text: str) -> list[float]:
    """A deterministic unit vector for ``text`` (the same text, the same vector)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(DIMENSIONS)
    return [float(value) for value in vector / np.linalg.norm(vector)]


def embeddings_reply(body: dict[str, Any], number: int) -> dict[str, Any]:
    """An OpenAI ``/embeddings`` reply: one fake vector per input."""
    return {"data": [{"index": index, "embedding": fake_vector(text)} for index, text in enumerate(body["input"])]}


def llm_env(server: HoldingServer) -> dict[str, str]:
    """A worker's environment naming ``server`` as its chat model."""
    return {"LLM_BASE_URL": server.url, "LLM_MODEL": "fake", "LLM_API_KEY": "test-key", "LLM_TIMEOUT": "60"}


def llm_settings(server: HoldingServer) -> Any:
    """Settings naming ``server`` as this process's chat model (``override_settings``)."""
    return override_settings(LLM={"BASE_URL": server.url, "API_KEY": "test-key", "MODEL": "fake", "TIMEOUT": 60,
                                  "MAX_STEPS": 4, "MAX_TOKENS": 4000})  # fmt: skip


def embeddings_env(server: HoldingServer) -> dict[str, str]:
    """A worker's environment naming ``server`` as its embedding endpoint."""
    return {"BRAIN_EMBEDDINGS_PROVIDER": "openai", "BRAIN_EMBEDDINGS_URL": server.url,
            "BRAIN_EMBEDDINGS_MODEL": "fake-embedder"}  # fmt: skip
