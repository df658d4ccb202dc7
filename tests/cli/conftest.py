"""What the CLI tests share: local HTTP servers standing in for Brain, a proxy or another service."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Handler = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], str]]:
    """Start a server answering every GET and POST with ``handle`` (which reads a request's
    body when it wants to: a proxy refusing a large one does not); returns its base URL.
    Stopped after the test."""
    servers: list[ThreadingHTTPServer] = []

    def start(handle: Handler) -> str:
        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                handle(self)

            def do_POST(self) -> None:
                handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
