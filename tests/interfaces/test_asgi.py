"""`interfaces.asgi.send_json_body`: the JSON reply the server's middlewares send without the app."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from interfaces.asgi import Message, send_json_body


def sent(status: int, payload: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None) -> list[Message]:
    messages: list[Message] = []

    async def send(message: Message) -> None:
        messages.append(message)

    asyncio.run(send_json_body(send, status, payload, headers))
    return messages


def test_the_reply_is_a_start_then_one_body_of_utf8_json() -> None:
    start, body = sent(503, {"detail": "服务器正在启动"})
    assert start["type"] == "http.response.start" and start["status"] == 503
    assert body["type"] == "http.response.body" and not body.get("more_body", False)
    assert "服务器正在启动".encode() in body["body"]  # not \\u-escaped
    assert json.loads(body["body"]) == {"detail": "服务器正在启动"}
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"application/json; charset=utf-8"
    assert headers[b"content-length"] == str(len(body["body"])).encode()  # bytes, not characters


def test_extra_headers_follow_the_content_headers() -> None:
    start, _ = sent(503, {}, [(b"retry-after", b"5"), (b"connection", b"close")])
    assert [name for name, _ in start["headers"]] == [b"content-type", b"content-length", b"retry-after",
                                                      b"connection"]
    assert start["headers"][2:] == [(b"retry-after", b"5"), (b"connection", b"close")]
