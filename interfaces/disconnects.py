"""A request's work stops when its client disconnects, on every route, streamed or not.

Starlette does not tell a running endpoint that its client left: a non-streamed ``/agentic_rag/run`` whose client
had gone ran for minutes, with every other user waiting behind it on 2 cores. `DisconnectMiddleware` gives each
HTTP request a `Cancellation` (read with `request_cancellation`, from the request's own thread too: the context
travels into Starlette's thread pool) and sets it when the client disconnects before the response has been sent.
The run then stops at its next stage boundary, and an answer the LLM is writing stops at its next chunk.

Usage::

    app.add_middleware(DisconnectMiddleware)
    ...
    cancel = request_cancellation()  # inside the request, e.g. in a Hayhooks wrapper's run_api
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

from haystack import logging

from helpers.records.cancellation import Cancellation
from interfaces.asgi import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

_CURRENT: ContextVar[Cancellation | None] = ContextVar("request_cancellation", default=None)


def request_cancellation() -> Cancellation | None:
    """The cancellation of the HTTP request being served (None outside a request)."""
    return _CURRENT.get()


class DisconnectMiddleware:
    """ASGI middleware: cancels the request's `Cancellation` when its client disconnects mid-request.

    Once the request body has been read, this middleware alone reads the connection; the app still sees the
    disconnect (a streaming response listens for it) through the receive channel it is given."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cancel = Cancellation()
        disconnected = asyncio.Event()
        state = {"answered": False}
        watcher: asyncio.Task[None] | None = None

        def client_left() -> None:
            disconnected.set()
            if not state["answered"]:
                cancel.cancel()
                logger.info("cancelled {method} {path}: the client disconnected", method=scope.get("method"),
                            path=scope.get("path"))

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            client_left()

        async def app_receive() -> Message:
            nonlocal watcher
            if watcher is not None:  # the body has been read: wait for the disconnect the watcher sees
                await disconnected.wait()
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.disconnect":
                client_left()
            elif not message.get("more_body", False):
                watcher = asyncio.create_task(watch())
            return message

        async def app_send(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                state["answered"] = True
            await send(message)

        token = _CURRENT.set(cancel)
        try:
            await self.app(scope, app_receive, app_send)
        finally:
            state["answered"] = True
            _CURRENT.reset(token)
            if watcher is not None:
                watcher.cancel()
