"""A real git smart-HTTP server on loopback: ``git http-backend`` behind a tiny WSGI server
that demands one token (HTTP Basic, any user name), as GitHub does for a push token."""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _app(root: Path, token: str, seen: list[str]) -> Any:
    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        header = environ.get("HTTP_AUTHORIZATION", "")
        seen.append(header)
        expected = base64.b64decode(header.removeprefix("Basic ")).decode().partition(":")[2] if header else ""
        if expected != token:
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Length", "0")])
            return [b""]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        cgi = {
            "GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": "mirror",
            "PATH_INFO": environ.get("PATH_INFO", ""), "QUERY_STRING": environ.get("QUERY_STRING", ""),
            "REQUEST_METHOD": environ["REQUEST_METHOD"], "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
            "CONTENT_LENGTH": str(len(body)), "PATH": "/usr/bin:/bin",
        }  # fmt: skip
        cgi.update(
            {key: value for key, value in environ.items() if key.startswith("HTTP_") and key != "HTTP_AUTHORIZATION"}
        )
        done = subprocess.run([HTTP_BACKEND], input=body, env=cgi, capture_output=True, check=False)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = "200 OK", []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = value.strip()
            elif name:
                headers.append((name, value.strip()))
        start_response(status, headers)
        return [payload]

    return app


@contextmanager
def git_http_server(root: Path, token: str) -> Iterator[tuple[str, list[str]]]:
    """Serve the bare repositories under ``root``; yields (base URL, Authorization headers seen)."""
    seen: list[str] = []
    server = make_server("127.0.0.1", 0, _app(root, token, seen), handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()
