"""The server's request guards, outermost: bearer authentication when ``API_KEY`` is set, and a request-body limit
(``MAX_BODY_BYTES``). With a key, every route except ``/status``, ``/favicon.ico`` and the static UI files (code, no
data; the page asks for the key and sends it) needs ``Authorization: Bearer <key>``.

Usage::

    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(BearerAuthMiddleware, api_key=settings.api_key)
"""

from __future__ import annotations

import hmac

from interfaces.asgi import ASGIApp, Message, Receive, Scope, Send, send_json_body

PUBLIC_PATHS = ("/status", "/ui/", "/favicon.ico")


async def send_json(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send_json_body(send, status, {"detail": detail}, headers)


class BearerAuthMiddleware:
    """Refuses requests without ``Authorization: Bearer <api_key>`` (401), except on public paths."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app, self._expected = app, f"Bearer {api_key}".encode()

    @staticmethod
    def is_public(path: str) -> bool:
        # a public path and what is below it (/status/agentic_rag), not every path that starts alike (/status-x)
        return path == "/" or any(path == p.rstrip("/") or path.startswith(p.rstrip("/") + "/") for p in PUBLIC_PATHS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") != "OPTIONS" and not self.is_public(scope["path"]):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send_json(send, 401, "missing or invalid API key: send Authorization: Bearer <API_KEY>",
                                [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


class BodyTooLargeError(Exception):
    pass


class BodyLimitMiddleware:
    """Refuses request bodies over ``max_bytes`` with 413, by Content-Length or while the body streams in."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body too large: the limit is {self.max_bytes} bytes (MAX_BODY_BYTES)"
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await send_json(send, 413, message)
            return
        received = 0
        exceeded = started = answered = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            incoming = await receive()
            received += len(incoming.get("body", b""))
            if received > self.max_bytes:
                exceeded = True
                raise BodyTooLargeError
            return incoming

        async def guarded_send(outgoing: Message) -> None:
            # the app may turn our error into its own (FastAPI answers 400 when reading a form fails): the 413 wins
            nonlocal started, answered
            if exceeded and not started:
                if not answered:
                    answered = True
                    await send_json(send, 413, message)
                return
            started = started or outgoing["type"] == "http.response.start"
            await send(outgoing)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except BodyTooLargeError:
            if not started and not answered:
                await send_json(send, 413, message)
