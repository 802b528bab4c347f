"""Issue 63, items 1 and 2 (real processes): a client that leaves stops every LLM call of its request within 2 s,
on every route, streamed or not (the rewriter and the judge were called without streaming and ran to their end for
nobody); SIGTERM with an answer in flight gives the client a clean 503 (or a last stream event) and the process
exits within 10 s. The scripted LLM server plays a slow model: it sees its stream closed."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.app_server import index_laws, server_env
from harness.openai_server import ScriptedOpenAIServer
from harness.server_process import ServerProcess

PIPL = "中华人民共和国个人信息保护法"
REWRITER = "你是中国法律检索专家"
ANSWERER = "严谨的中国法律咨询助手"
SLOW = '{"variants": ["处理个人信息应当取得个人同意"], "keywords": ["同意"]}' + " " * 400  # ~50 chunks, 0.3 s apart


@pytest.fixture(scope="module")
def served(tmp_path_factory, e5_model) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("cancel") / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer(default="好的") as llm:
        llm.add_rule(REWRITER, SLOW, chunk_delay=0.3)
        llm.add_rule(ANSWERER, f"需要。依据《{PIPL}》第十四条，处理个人信息应当取得同意。" * 30, chunk_delay=0.3)
        with ServerProcess(server_env(data, e5_model, llm.base_url), log_path=data.parent / "server.log") as app:
            yield {"app": app, "llm": llm, "data": data, "e5": e5_model}


def send_and_leave(app: ServerProcess, path: str, body: dict[str, Any], llm: ScriptedOpenAIServer,
                   prompt: str) -> float:
    """POST ``body`` on a raw socket, close it once the LLM has been asked ``prompt``: the seconds from the close
    until the scripted LLM server saw the reply to that prompt closed (it was streamed, even when the client's
    response is not)."""
    llm.aborted.clear()
    llm.aborted_requests.clear()
    asked = len(llm.calls(prompt))
    payload = json.dumps(body, ensure_ascii=False).encode()
    connection = socket.create_connection(("127.0.0.1", app.port))
    connection.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
    deadline = time.monotonic() + 60
    while len(llm.calls(prompt)) == asked and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(llm.calls(prompt)) > asked, "the LLM was never asked"
    time.sleep(0.5)  # the reply is streaming to the server
    connection.close()
    left = time.monotonic()
    assert llm.aborted.wait(15), "the LLM's reply ran on after the client had left"
    seconds = time.monotonic() - left
    assert prompt in json.dumps(llm.aborted_requests[0]["messages"], ensure_ascii=False)
    return seconds


CASES = {
    "run agentic (the rewriter)": ("/agentic_rag/run",
                                   {"query": "公司收集个人信息要同意吗（取消一）", "mode": "agentic"}, REWRITER),
    "run rag (the answer)": ("/agentic_rag/run", {"query": "公司收集个人信息要同意吗（取消二）", "mode": "rag"},
                             ANSWERER),
    "chat agentic (the rewriter)": ("/v1/chat/completions", {"model": "agentic_rag", "messages": [
        {"role": "user", "content": "公司收集个人信息要同意吗（取消三）"}]}, REWRITER),
    "chat streamed agentic (the rewriter)": ("/v1/chat/completions", {"model": "agentic_rag", "stream": True,
                                                                     "messages": [{"role": "user", "content":
                                                                                   "公司收集个人信息要同意吗（取消四）"}]},
                                             REWRITER),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_client_that_leaves_stops_the_llm_call_in_flight_within_2_s(served, case):
    path, body, prompt = CASES[case]
    seconds = send_and_leave(served["app"], path, body, served["llm"], prompt)
    assert seconds < 2, f"{case}: the LLM stream was closed {seconds:.1f} s after the client left"
    calls = len(served["llm"].requests)
    time.sleep(1.5)
    assert len(served["llm"].requests) == calls, "the cancelled run went on calling the LLM"
    log = served["app"].log_path.read_text(errors="replace")
    assert "RunCancelled" not in log and "Pipeline execution error" not in log  # one line, no traceback


def test_sigterm_with_an_answer_in_flight_answers_503_and_exits_within_10_s(served, tmp_path):
    llm = served["llm"]
    index_laws(tmp_path / "data", served["e5"], [PIPL])
    with ServerProcess(server_env(tmp_path / "data", served["e5"], llm.base_url),
                       log_path=tmp_path / "server.log") as app:
        answers: dict[str, Any] = {}

        def ask() -> None:
            answers["run"] = httpx.post(f"{app.base_url}/agentic_rag/run", timeout=60,
                                        json={"query": "公司收集个人信息要同意吗（停机）", "mode": "agentic"})

        asked = len(llm.calls(REWRITER))
        asking = threading.Thread(target=ask)
        asking.start()
        deadline = time.monotonic() + 60
        while len(llm.calls(REWRITER)) == asked and time.monotonic() < deadline:
            time.sleep(0.1)
        assert app.process is not None
        started = time.monotonic()
        app.process.send_signal(signal.SIGTERM)
        asking.join(15)
        app.process.wait(timeout=15)
        exited = time.monotonic() - started
        response = answers["run"]
        assert response.status_code == 503 and response.headers["content-type"].startswith("application/json")
        assert "shutting down" in response.json()["detail"]
        assert exited < 10, f"the server exited {exited:.1f} s after SIGTERM"
