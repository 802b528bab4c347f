"""A streamed chat completion ends as OpenAI's does: with ``data: [DONE]``.

Hayhooks' streaming (fastapi-openai-compat) ends its server-sent events with the ``finish_reason: "stop"`` chunk
and no ``[DONE]`` line; clients written against OpenAI (and SDKs that wait for the sentinel) then read until the
connection closes. This middleware appends the line to every ``text/event-stream`` answer of the chat routes.

Usage::

    app.add_middleware(StreamEndMiddleware)
"""

from __future__ import annotations

from interfaces.asgi import ASGIApp, Message, Receive, Scope, Send

DONE_EVENT = b"data: [DONE]\n\n"
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


def is_chat_path(path: str) -> bool:
    """The OpenAI-compatible chat routes: ``/v1/chat/completions``, ``/chat/completions`` and ``/{name}/chat``."""
    return path.rstrip("/").endswith(CHAT_PATHS) or path.rstrip("/").endswith("/chat")


class StreamEndMiddleware:
    """ASGI middleware: a chat route's event stream gets ``data: [DONE]`` after its last event."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_chat_path(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        streaming = False

        async def ending_send(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                streaming = headers.get(b"content-type", b"").startswith(b"text/event-stream")
            elif streaming and message["type"] == "http.response.body" and not message.get("more_body", False):
                message = {**message, "body": message.get("body", b"") + DONE_EVENT}
            await send(message)

        await self.app(scope, receive, ending_send)
