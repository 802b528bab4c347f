"""A scripted SerpAPI-shaped search server on 127.0.0.1 for tests (real HTTP, real ``serpapi`` client).

It answers ``GET /search?engine=...&q=...&api_key=...`` like serpapi.com: ``organic_results`` and
``search_metadata`` as JSON, or a scripted HTTP status with ``{"error": ...}``, a delay, or a raw body.
Every request's query parameters are recorded (one value per name) so tests can assert on what was sent.

Usage::

    with ScriptedSerpAPIServer(results=[{"title": "个人信息保护法", "link": "https://example.cn/pipl",
                                         "snippet": "第十三条 ..."}]) as server:
        search = SerpAPIWebSearch(base_url=server.base_url)
        search.run(query="个人信息")
        assert server.requests[0]["q"] == "个人信息"
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.local_http import LocalHTTPServer

INVALID_KEY_ERROR = "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"


class ScriptedSerpAPIServer(LocalHTTPServer):
    """Scripted SerpAPI host; change ``results``, ``status``, ``error``, ``delay`` or ``raw_body`` at any time.

    :param results: organic results; entries without ``position`` get their 1-based index.
    :param status: HTTP status of every answer; non-200 answers carry ``{"error": error}``.
    :param error: the error text for non-200 answers (and for a 200 answer when ``results`` is empty and
        ``error`` is set, as serpapi.com does for "Google hasn't returned any results for this query.").
    :param delay: seconds to wait before answering (to test timeouts).
    :param raw_body: when set, sent verbatim (status ``status``, type application/json) instead of JSON.
    :param valid_key: when set, any other ``api_key`` is answered with 401 and the invalid-key error.
    :param honour_num: cut ``organic_results`` to the ``num`` parameter (False: send them all).
    """

    def __init__(
        self,
        results: list[dict[str, Any]] | None = None,
        status: int = 200,
        error: str | None = None,
        delay: float = 0.0,
        raw_body: str | None = None,
        valid_key: str | None = None,
        honour_num: bool = True,
    ) -> None:
        self.results = results or []
        self.status = status
        self.error = error
        self.delay = delay
        self.raw_body = raw_body
        self.valid_key = valid_key
        self.honour_num = honour_num
        self.requests: list[dict[str, str]] = []
        self.paths: list[str] = []
        super().__init__()

    @property
    def base_url(self) -> str:
        return self.origin

    def _payload(self, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if self.valid_key is not None and params.get("api_key") != self.valid_key:
            return 401, {"error": INVALID_KEY_ERROR}
        if self.status != 200:
            return self.status, {"error": self.error or "Internal server error."}
        number = len(self.requests)
        metadata = {"id": f"scripted-{number}", "status": "Success",
                    "created_at": time.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    "total_time_taken": 0.01, "google_url": "https://www.google.com/search?q=" + params.get("q", "")}
        payload: dict[str, Any] = {
            "search_metadata": metadata,
            "search_parameters": {k: v for k, v in params.items() if k != "api_key"},
        }
        if not self.results and self.error:
            payload["error"] = self.error
            return 200, payload
        organic = [{"position": i + 1, **result} for i, result in enumerate(self.results)]
        num = params.get("num")
        payload["organic_results"] = organic[: int(num)] if self.honour_num and num and num.isdigit() else organic
        return 200, payload

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                params = {name: values[-1] for name, values in parse_qs(url.query, keep_blank_values=True).items()}
                outer.paths.append(url.path)
                outer.requests.append(params)
                if outer.delay:
                    time.sleep(outer.delay)
                try:
                    if url.path != "/search":
                        self._send(404, json.dumps({"error": f"Unknown path {url.path}"}).encode())
                    elif outer.raw_body is not None:
                        self._send(outer.status, outer.raw_body.encode())
                    else:
                        status, payload = outer._payload(params)
                        self._send(status, json.dumps(payload, ensure_ascii=False).encode())
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        return Handler
