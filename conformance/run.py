"""``make conformance``: the official MCP conformance suite against a running Brain.

Starts gunicorn (as the Procfile does) on the demo data, connects as the demo member
``alice`` through the real OAuth 2.1 flow, and runs the server scenarios that apply to a
tools-only, stateless, JSON-only server against ``/api/mcp``.

The suite's client cannot send credentials, so a small loopback proxy adds alice's
bearer token to requests for ``/api/mcp`` that carry none, and passes everything else —
the Host and Origin headers included — through untouched. The deployment's base URL is
the proxy's, so the server's Origin check sees what a real client would send.

Results go to ``var/conformance/``; the exit status is non-zero when a scenario fails.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.oauth_client import connect, disconnect  # noqa: E402
from bench.serve import demo_password, free_port, gunicorn, prepare  # noqa: E402

# Server scenarios that apply: the suite's other server scenarios exercise features Brain
# does not offer (resources, prompts, sampling, elicitation, logging, SSE streams, and
# tools that only its reference server defines).
SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]
CLI = ROOT / "conformance" / "node_modules" / ".bin" / "conformance"
NODE_BIN = ROOT / "conformance" / "node_modules" / ".bin"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


def proxy(upstream_port: int, token: dict[str, str]) -> ThreadingHTTPServer:
    """A loopback proxy that adds the bearer token to ``/api/mcp`` requests without one."""

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
            if self.path.startswith("/api/mcp") and "Authorization" not in self.headers and token.get("value"):
                headers["Authorization"] = f"Bearer {token['value']}"
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                payload = answer.read()
            except OSError:  # the suite's client hung up mid-request; nothing to answer
                upstream.close()
                return
            self.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            upstream.close()

        do_GET = do_POST = do_DELETE = do_PUT = _forward

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Forward)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeatable)")
    args = parser.parse_args()
    if not CLI.exists():
        print("conformance suite not installed: run `make conformance`", file=sys.stderr)
        return 2
    prepare()
    token: dict[str, str] = {}
    app_port = free_port()
    front = proxy(app_port, token)
    base_url = f"http://127.0.0.1:{front.server_address[1]}"
    out_dir = ROOT / "var" / "conformance"
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, str] = {}
    with gunicorn(app_port, env={"BRAIN_BASE_URL": base_url}):
        connection = connect(base_url, "alice", demo_password(), client_name="MCP conformance suite")
        token["value"] = connection.access_token
        try:
            for scenario in args.scenario or SCENARIOS:
                completed = subprocess.run(
                    [str(CLI), "server", "--url", f"{base_url}/api/mcp", "--scenario", scenario,
                     "--output-dir", str(out_dir)],
                    env={"PATH": f"{NODE_BIN}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=300,
                )  # fmt: skip
                (out_dir / f"{scenario}.log").write_text(completed.stdout + completed.stderr)
                results[scenario] = "passed" if completed.returncode == 0 else "FAILED"
                print(f"{scenario:28} {results[scenario]}")
                if completed.returncode != 0:
                    print(completed.stdout[-3000:], completed.stderr[-2000:], sep="\n")
        finally:
            disconnect(connection)
            front.shutdown()
    (out_dir / "summary.json").write_text(json.dumps(results, indent=2))
    failed = [name for name, outcome in results.items() if outcome != "passed"]
    print(f"\n{len(results) - len(failed)}/{len(results)} scenarios passed; logs in {out_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
