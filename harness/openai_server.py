"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests (real HTTP, real openai client).

Each request is answered by the first rule whose ``match`` string occurs in the request's messages (or the
default). Every request body is recorded so tests can assert on what the client sent.

Usage::

    with ScriptedOpenAIServer(default="你好") as server:
        server.add_rule("评分", '{"score": 35}')
        os.environ["LLM_BASE_URL"] = server.base_url
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.local_http import LocalHTTPServer

TOOL_PREFIX = "TOOL:"


@dataclass
class Rule:
    match: str | tuple[str, ...]  # a tuple: every part must occur

    def matches(self, text: str) -> bool:
        return all(part in text for part in ((self.match,) if isinstance(self.match, str) else self.match))

    reply: str | list[str]
    status: int = 200
    delay: float = 0.0
    top_logprobs: list[tuple[str, float]] | None = None
    chunk_delay: float = 0.0
    finish_reason: str = "stop"


class ScriptedOpenAIServer(LocalHTTPServer):
    def __init__(self, default: str = "好的。") -> None:
        self.default = default
        self.rules: list[Rule] = []
        self.requests: list[dict[str, Any]] = []
        self.aborted = threading.Event()  # set when a client closed a streamed reply before its end
        self.aborted_requests: list[dict[str, Any]] = []  # the requests whose streamed reply was closed early
        self._lock = threading.Lock()
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def add_rule(
        self,
        match: str | tuple[str, ...],
        reply: str | list[str],
        status: int = 200,
        delay: float = 0.0,
        top_logprobs: list[tuple[str, float]] | None = None,
        chunk_delay: float = 0.0,
        finish_reason: str = "stop",
    ) -> None:
        """Answer requests whose messages contain ``match`` (every part of a tuple); a list of replies is used in
        turn, the last one repeating; ``top_logprobs`` are sent for the first token; a streamed reply waits
        ``chunk_delay`` seconds between its 8-character chunks; ``finish_reason="length"`` plays a reply cut at
        ``max_tokens``."""
        reply = list(reply) if isinstance(reply, list) else reply  # the rule's own copy: it pops from it
        self.rules.append(Rule(match, reply, status, delay, top_logprobs, chunk_delay, finish_reason))

    def _answer(self, body: dict[str, Any]) -> tuple[Rule, str]:
        text = json.dumps(body.get("messages", []), ensure_ascii=False)
        with self._lock:
            rule = next((rule for rule in self.rules if rule.matches(text)), Rule("", self.default))
            if isinstance(rule.reply, list):
                reply = rule.reply.pop(0) if len(rule.reply) > 1 else rule.reply[0]
            else:
                reply = rule.reply
        return rule, reply

    def calls(self, match: str) -> list[dict[str, Any]]:
        """The recorded requests whose messages contain ``match``."""
        return [r for r in self.requests if match in json.dumps(r.get("messages", []), ensure_ascii=False)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], reply: str, rule: Rule) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                pieces = [reply[i : i + 8] for i in range(0, len(reply), 8)] or [""]
                for i, piece in enumerate(pieces):
                    chunk = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": int(time.time()),
                             "model": body.get("model", "scripted"),
                             "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece} if i == 0
                                          else {"content": piece}, "finish_reason": None}]}
                    try:
                        self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: so does a server
                        outer.aborted_requests.append(body)
                        outer.aborted.set()
                        return
                    time.sleep(rule.chunk_delay)
                end = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": int(time.time()),
                       "model": body.get("model", "scripted"),
                       "choices": [{"index": 0, "delta": {}, "finish_reason": rule.finish_reason}]}
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append(body)
                rule, reply = outer._answer(body)
                time.sleep(rule.delay)
                if rule.status != 200:
                    self._send(rule.status, {"error": {"message": reply, "type": "server_error"}})
                    return
                if body.get("stream"):
                    self._stream(body, reply, rule)
                    return
                choice: dict[str, Any] = {"index": 0, "finish_reason": rule.finish_reason,
                                          "message": {"role": "assistant", "content": reply}}
                if reply.startswith(TOOL_PREFIX):  # "TOOL:{"name": ..., "arguments": {...}}" → an OpenAI tool call
                    call = json.loads(reply[len(TOOL_PREFIX):])
                    choice = {"index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": None, "tool_calls": [{
                            "id": f"call_{len(outer.requests)}", "type": "function",
                            "function": {"name": call["name"],
                                         "arguments": json.dumps(call["arguments"], ensure_ascii=False)}}]}}
                if rule.top_logprobs and body.get("logprobs"):
                    top = [{"token": t, "logprob": lp, "bytes": None} for t, lp in rule.top_logprobs]
                    choice["logprobs"] = {"content": [{**top[0], "top_logprobs": top}]}
                self._send(200, {
                    "id": f"chatcmpl-{len(outer.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [choice],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

        return Handler
