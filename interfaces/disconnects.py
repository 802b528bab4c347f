"""A request's work stops when its client disconnects or the server stops, on every route, streamed or not.

Starlette does not tell a running endpoint that its client left: a non-streamed ``/agentic_rag/run`` whose client
had gone ran for minutes, with every other user waiting behind it on 2 cores. `DisconnectMiddleware` gives each
HTTP request a `Cancellation`, current for the request's code (`helpers.records.cancellation.current_cancellation`,
from its threads too: the context travels into Starlette's thread pool), and sets it when the client disconnects
before the response has been sent. The run then stops at its next stage boundary, and an LLM call in flight stops
(`llm_access.call_policy`).

On SIGTERM the server drains (`InFlight.drain`): new requests get 503 with the reason, and the requests in flight
are cancelled, so they end at once with a 503 (or a last event of their stream) instead of running on for minutes.

Usage::

    in_flight = InFlight()
    app.add_middleware(DisconnectMiddleware, in_flight=in_flight)
    ...
    in_flight.drain("the server is shutting down"); in_flight.wait_idle(8)   # from the signal handler's thread
"""

from __future__ import annotations

import asyncio
import threading

from haystack import logging

from helpers.records.cancellation import Cancellation, RunCancelled, cancelling
from interfaces.asgi import ASGIApp, Message, Receive, Scope, Send, send_json_body

logger = logging.getLogger(__name__)

CLIENT_LEFT = "the client disconnected"
SHUTTING_DOWN = "the server is shutting down"


class InFlight:
    """The requests being served, and whether the server is stopping. Lifetime: one per app."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: set[Cancellation] = set()
        self.stopping: str | None = None

    def add(self, cancel: Cancellation) -> None:
        with self._changed:
            self._running.add(cancel)

    def remove(self, cancel: Cancellation) -> None:
        with self._changed:
            self._running.discard(cancel)
            self._changed.notify_all()

    def drain(self, reason: str = SHUTTING_DOWN) -> int:
        """Refuse new requests with ``reason`` and cancel those in flight; the number cancelled."""
        with self._changed:
            self.stopping = reason
            running = list(self._running)
        for cancel in running:
            cancel.cancel(reason)
        return len(running)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is in flight (True) or ``timeout`` seconds have passed (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._running, timeout)


class DisconnectMiddleware:
    """ASGI middleware: cancels the request's `Cancellation` when its client disconnects mid-request, and answers
    503 while the server drains.

    Once the request body has been read, this middleware alone reads the connection; the app still sees the
    disconnect (a streaming response listens for it) through the receive channel it is given."""

    def __init__(self, app: ASGIApp, in_flight: InFlight | None = None) -> None:
        self.app = app
        self.in_flight = in_flight or InFlight()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight.stopping:
            await send_json_body(send, 503, {"detail": f"{self.in_flight.stopping}; try again shortly"},
                                 [(b"retry-after", b"10"), (b"connection", b"close")])
            return
        cancel = Cancellation()
        disconnected = asyncio.Event()
        state = {"answered": False, "started": False}
        watcher: asyncio.Task[None] | None = None

        def client_left() -> None:
            disconnected.set()
            if not state["answered"]:
                cancel.cancel(CLIENT_LEFT)
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
            state["started"] = state["started"] or message["type"] == "http.response.start"
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                state["answered"] = True
            await send(message)

        self.in_flight.add(cancel)
        try:
            with cancelling(cancel):
                await self.app(scope, app_receive, app_send)
        except RunCancelled:  # the run stopped on its cancellation: one line, and an answer if one can be sent
            logger.info("{method} {path} stopped: {reason}", method=scope.get("method"), path=scope.get("path"),
                        reason=cancel.reason)
            if not state["started"] and not disconnected.is_set():
                await send_json_body(send, 503, {"detail": f"请求已取消：{cancel.reason}"})
        finally:
            state["answered"] = True
            self.in_flight.remove(cancel)
            if watcher is not None:
                watcher.cancel()
