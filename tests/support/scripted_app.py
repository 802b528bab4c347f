"""A scripted stand-in for this project's app server over real HTTP, for the tests of its clients (the CLI beside a
running `serve`, `interfaces.server_client`, `interfaces.server_record`): each ``(method, path)`` answers the
replies it was given in turn (the last one repeating), anything else a 404; every request is recorded.

Usage::

    with ScriptedApp() as app:
        app.reply("GET", "/status", 200, {"status": "Up!"})
        app.reply("POST", "/agentic_rag/run", 503, {"detail": "starting"}, headers={"Retry-After": "0"})
        httpx.get(app.origin + "/status")
        app.requests   # [Request("GET", "/status", {...headers}, b"")]
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.local_http import LocalHTTPServer


@dataclass
class Reply:
    status: int
    body: Any  # JSON-encoded unless it is bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ScriptedApp(LocalHTTPServer):
    def __init__(self) -> None:
        self.replies: dict[tuple[str, str], list[Reply]] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        super().__init__()

    def reply(self, method: str, path: str, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        """Add a reply to ``method path`` (answered after the ones added before it; the last one repeats)."""
        self.replies.setdefault((method, path), []).append(Reply(status, body, headers or {}))

    def _next(self, method: str, path: str) -> Reply:
        with self._lock:
            queue = self.replies.get((method, path))
            if not queue:
                return Reply(404, {"detail": "Not Found"})
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append(Request(self.command, self.path, dict(self.headers), body))
                reply = outer._next(self.command, self.path)
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body,
                                                                                    ensure_ascii=False).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json" if not isinstance(reply.body, bytes)
                                 else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

        return Handler
