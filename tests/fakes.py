"""Fakes for what sits across a network we do not own: a real local HTTP server each."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.test import override_settings


def respond(request: BaseHTTPRequestHandler, status: int, content_type: str, body: bytes, **headers: str) -> None:
    """Answer ``request`` with ``body`` (its length declared) and any extra ``headers``."""
    request.send_response(status)
    request.send_header("Content-Type", content_type)
    for name, value in headers.items():
        request.send_header(name, value)
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


class FakeModel:
    """A real HTTP server speaking OpenAI chat completions, answering from a script."""

    def __init__(self, script: Callable[[dict[str, Any], int], dict[str, Any]]) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                message = script(body, len(owner.requests))
                payload = json.dumps({"choices": [{"message": message}], "usage": {"total_tokens": 50}}).encode()
                respond(self, 200, "application/json", payload)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def settings(self, **extra: Any) -> Any:
        return override_settings(LLM={"BASE_URL": self.url, "API_KEY": "test-key", "MODEL": "fake", "TIMEOUT": 5,
                                      "MAX_STEPS": 4, "MAX_TOKENS": 4000, **extra})  # fmt: skip

    def close(self) -> None:
        self.server.shutdown()


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A TCP port on loopback that accepts connections and never says a word: a server that
    hangs rather than one that is down (a Redis, a git remote). Yields the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
