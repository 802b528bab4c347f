"""`interfaces.stream_end`: a chat route's event stream ends with ``data: [DONE]``, as OpenAI's does; nothing else
is touched. The real server's stream is in tests/serving/test_hayhooks_server.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient

from interfaces.stream_end import DONE_EVENT, StreamEndMiddleware, is_chat_path

EVENTS = [b'data: {"choices": [{"delta": {"content": "\xe9\x9c\x80"}}]}\n\n', b'data: {"finish_reason": "stop"}\n\n']


def events() -> Iterator[bytes]:
    yield from EVENTS


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    @app.post("/chat/completions")
    @app.post("/agentic_rag/chat")
    @app.post("/agentic_rag/run")
    def stream() -> StreamingResponse:
        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/v1/chat/completions/json")
    def not_a_chat_route() -> dict[str, str]:
        return {"path": "other"}

    app.add_middleware(StreamEndMiddleware)
    return TestClient(app)


@pytest.mark.parametrize(("path", "chat"), [
    ("/v1/chat/completions", True), ("/v1/chat/completions/", True), ("/chat/completions", True),
    ("/agentic_rag/chat", True), ("/agentic_rag/chat/", True),
    ("/agentic_rag/run", False), ("/v1/models", False), ("/chat/completions/plain", False), ("/chatter", False),
])
def test_which_paths_are_chat_routes(path: str, chat: bool) -> None:
    assert is_chat_path(path) is chat


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions", "/agentic_rag/chat"])
def test_a_chat_event_stream_ends_with_done_once(client: TestClient, path: str) -> None:
    body = client.post(path).content
    assert body == b"".join(EVENTS) + DONE_EVENT
    assert body.count(b"[DONE]") == 1  # after the last event only, not after every chunk


def test_other_routes_are_left_as_they_are(client: TestClient) -> None:
    assert client.post("/agentic_rag/run").content == b"".join(EVENTS)  # a stream, but not a chat route
    assert client.post("/v1/chat/completions/json").json() == {"path": "other"}


def test_a_json_chat_answer_gets_no_done_line() -> None:
    """A non-streamed chat completion is JSON: ``[DONE]`` would break it."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    def completion() -> dict[str, str]:
        return {"object": "chat.completion"}

    app.add_middleware(StreamEndMiddleware)
    response = TestClient(app).post("/v1/chat/completions")
    assert response.json() == {"object": "chat.completion"}
