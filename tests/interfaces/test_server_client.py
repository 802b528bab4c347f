"""`interfaces.server_client.ServerClient` against a scripted app server over real HTTP: what it sends, how it waits
for a server that is still starting, and its one-line errors."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from interfaces.server_client import ServerClient, ServerRequestError, detail
from llm_access.embedded_server import free_port
from tests.support.scripted_app import ScriptedApp


@pytest.fixture
def app() -> Iterator[ScriptedApp]:
    with ScriptedApp() as server:
        yield server


def test_a_url_without_a_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match=r"url must start with http:// or https://, got '127.0.0.1:1416'"):
        ServerClient("127.0.0.1:1416")


def test_run_posts_the_payload_to_the_deployment_with_the_key_and_returns_its_result(app: ScriptedApp) -> None:
    app.reply("POST", "/agentic_rag/run", 200, {"result": {"answer": "需要同意。"}})
    client = ServerClient(app.origin + "/", api_key="secret-key")  # a trailing slash is not doubled
    assert client.run("agentic_rag", {"query": "个人信息", "mode": "rag"}) == {"answer": "需要同意。"}
    [sent] = app.requests
    assert (sent.method, sent.path) == ("POST", "/agentic_rag/run")
    assert sent.json() == {"query": "个人信息", "mode": "rag"}
    assert sent.headers["Authorization"] == "Bearer secret-key"


def test_without_a_key_no_authorization_header_is_sent(app: ScriptedApp) -> None:
    app.reply("POST", "/feedback", 201, {"feedback_id": "f1"})
    assert ServerClient(app.origin).post("/feedback", {"answer_id": "a1", "verdict": "up"}) == {"feedback_id": "f1"}
    assert "Authorization" not in app.requests[0].headers


def test_a_server_still_starting_is_waited_for(app: ScriptedApp) -> None:
    """503 with Retry-After: the deployments are loading; the request is sent again until it is answered."""
    starting = {"detail": "the server is starting (loading agentic_rag); try again shortly"}
    app.reply("POST", "/knowledge_bases/run", 503, starting, headers={"Retry-After": "0.05"})
    app.reply("POST", "/knowledge_bases/run", 503, starting, headers={"Retry-After": "0.05"})
    app.reply("POST", "/knowledge_bases/run", 200, {"result": {"knowledge_bases": []}})
    assert ServerClient(app.origin).run("knowledge_bases", {"action": "list"}) == {"knowledge_bases": []}
    assert len(app.requests) == 3


def test_a_server_that_stays_starting_past_the_wait_is_an_error(app: ScriptedApp) -> None:
    app.reply("POST", "/agentic_rag/run", 503, {"detail": "the server is starting"}, headers={"Retry-After": "0.05"})
    with pytest.raises(ServerRequestError, match="answered 503: the server is starting$"):
        ServerClient(app.origin, starting_wait=0).run("agentic_rag", {"query": "问"})
    assert len(app.requests) == 1


def test_a_503_without_retry_after_is_not_waited_for(app: ScriptedApp) -> None:
    """A 503 without Retry-After is a failure (a deployment that failed to load), not a start."""
    app.reply("POST", "/index/run", 503, {"detail": "index is not available: it failed to load (OSError: disk)"})
    with pytest.raises(ServerRequestError) as raised:
        ServerClient(app.origin).request("POST", "/index/run", data={"knowledge_base": "kb"})
    assert str(raised.value) == (f"the server at {app.origin} answered 503: index is not available: it failed to "
                                 "load (OSError: disk)")
    assert len(app.requests) == 1


def test_a_form_with_files_is_sent_as_multipart(app: ScriptedApp) -> None:
    app.reply("POST", "/index/run", 200, {"result": {"job_id": "j1"}})
    ServerClient(app.origin).request("POST", "/index/run", data={"knowledge_base": "kb", "laws": ["民法典"]},
                                     files=[("files", ("手册.md", "第一条 内容".encode()))])
    sent = app.requests[0]
    assert sent.headers["Content-Type"].startswith("multipart/form-data")
    assert "手册.md".encode() in sent.body and "民法典".encode() in sent.body


def test_a_server_that_does_not_answer_is_a_one_line_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerRequestError, match=f"^the server at {url} did not answer: "):
        ServerClient(url).run("agentic_rag", {"query": "问"})


@pytest.mark.parametrize(("response", "expected"), [
    (httpx.Response(404, json={"detail": "unknown knowledge base 'x'"}), "unknown knowledge base 'x'"),
    (httpx.Response(422, json={"detail": [{"loc": ["body", "query"], "msg": "Field required"},
                                          {"loc": ["body", "top_k"], "msg": "Input should be a valid integer"}]}),
     "Field required; Input should be a valid integer"),
    (httpx.Response(422, json={"detail": ["plain", {"no_msg": 1}]}), "plain; {'no_msg': 1}"),
    (httpx.Response(502, text="<html>Bad Gateway</html>"), "<html>Bad Gateway</html>"),
    (httpx.Response(500, json=["not", "an", "object"]), '["not","an","object"]'),
    (httpx.Response(500, text="x" * 1000), "x" * 300),
])
def test_the_error_detail_is_fastapis_detail_else_the_start_of_the_body(response: httpx.Response,
                                                                         expected: str) -> None:
    assert detail(response) == expected
