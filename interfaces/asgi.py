"""The ASGI types and the JSON reply that the server's middlewares share.

Usage::

    await send_json_body(send, 503, {"detail": "starting"}, [(b"retry-after", b"5")])
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_json_body(send: Send, status: int, payload: dict[str, Any],
                         headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer with ``payload`` as JSON (UTF-8, not ASCII-escaped)."""
    body = json.dumps(payload, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
