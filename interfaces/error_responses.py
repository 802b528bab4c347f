"""The server's error answers: one JSON line each. A 422 names the wrong fields in a sentence; a 500 names a request
id, and the server log holds its traceback under that id.

An error no handler expected used to reach the client as Starlette's plain-text ``Internal Server Error`` and the
log as a traceback with no request id; a pipeline failure's 500 (``内部错误（bm25）``) pointed at a log that held one
line. Now each names Hayhooks' request id (also sent as the ``x-request-id`` header), and the log holds the
traceback with it.

Usage::

    app.add_middleware(InternalErrorMiddleware)  # after Hayhooks' own (it sets the request id)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from haystack import logging
from starlette.exceptions import HTTPException as StarletteHTTPException

from interfaces.asgi import ASGIApp, Message, Receive, Scope, Send, send_json_body

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "服务器内部错误，请稍后重试"


def request_id_of(scope: Scope) -> str:
    """The id Hayhooks gave the request (``scope["state"]["request_id"]``); a new one when it gave none."""
    state: Any = scope.get("state") or {}
    found = state.get("request_id") if isinstance(state, dict) else getattr(state, "request_id", None)
    return str(found or uuid.uuid4().hex[:8])


def with_request_id(detail: str, request_id: str) -> str:
    """A 5xx message with the id under which the server log holds its details."""
    return f"{detail}（请求编号 {request_id}）"


class InternalErrorMiddleware:
    """ASGI middleware: an exception no handler took becomes a JSON 500 naming the request id, and its traceback is
    logged with that id. When the response had already started, the connection is closed (nothing can be sent)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        except Exception:  # the last place an error can be turned into an answer
            request_id = request_id_of(scope)
            logger.exception("unhandled error in {method} {path} (request {request_id})", method=scope.get("method"),
                             path=scope.get("path"), request_id=request_id)
            if not started:
                await send_json_body(send, 500, {"detail": with_request_id(INTERNAL_ERROR, request_id)},
                                     [(b"x-request-id", request_id.encode())])


async def validation_error(request: Request, error: Exception) -> JSONResponse:
    """422 with one line that names each wrong field (``query: Field required; top_k: …``) and, for programs, the
    field errors; a body that is not text (FastAPI's own handler fails on it with a 500) is shown decoded."""
    assert isinstance(error, RequestValidationError)
    errors = [{key: (value.decode("utf-8", "replace")[:200] if isinstance(value, bytes) else value)
               for key, value in item.items() if key in ("loc", "msg", "type")} for item in error.errors()]
    line = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg', '')}"
                     for e in errors[:5])
    return JSONResponse({"detail": f"invalid request: {line[:500]}", "errors": jsonable_encoder(errors[:20])},
                        status_code=422)


async def http_error(request: Request, error: Exception) -> Response:
    """Hayhooks answers a chat request for a deployment without chat support with 501: for a client that is an
    unknown model (404). A 5xx names the request id its details are logged under."""
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == 501:
        return JSONResponse({"detail": f"{error.detail}: the chat model of this server is 'agentic_rag'"},
                            status_code=404)
    if error.status_code >= 500 and isinstance(error.detail, str):
        return JSONResponse({"detail": with_request_id(error.detail, request_id_of(request.scope))},
                            status_code=error.status_code, headers=error.headers)
    return await http_exception_handler(request, error)
