import os
import signal
import socket
import time

import pytest
from haystack.dataclasses import ChatMessage

from harness.openai_server import ScriptedOpenAIServer
from llm_access.call_policy import LLMComponent
from llm_access.embedded_server import EmbeddedLLMServer, LLMServerError, shared_server
from llm_access.factory import make_chat_generator, resolve_endpoint


def test_deepseek_key_wins(settings, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    endpoint = resolve_endpoint(settings)
    assert (endpoint.kind, endpoint.base_url, endpoint.model) == ("deepseek", "https://api.deepseek.com",
                                                                  "deepseek-chat")
    assert endpoint.api_key_env == "DEEPSEEK_API_KEY"


def test_configured_server_is_used_over_http(settings, monkeypatch):
    with ScriptedOpenAIServer(default="你好，我是测试服务器。") as server:
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "scripted-model")
        from config.settings import Settings

        generator = make_chat_generator(Settings.from_env(), generation_kwargs={"temperature": 0})
        reply = generator.run(messages=[ChatMessage.from_user("你好")])["replies"][0]
    assert reply.text == "你好，我是测试服务器。"
    assert server.requests[0]["model"] == "scripted-model"
    assert server.requests[0]["messages"][-1]["content"] == "你好"


def test_missing_gguf_gives_a_clear_error(tmp_path):
    with pytest.raises(LLMServerError, match="python -m pipelines setup"):
        EmbeddedLLMServer(tmp_path / "missing.gguf").start()


def test_the_server_log_is_not_held_open_by_this_process(tmp_path):
    """Issue 19, bug 9a: each start opened the log file and never closed it."""
    import gc
    import warnings

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a GGUF file")
    log = tmp_path / "llm_server.log"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(2):
            with pytest.raises(LLMServerError, match="exited with code"):
                EmbeddedLLMServer(broken, start_timeout=60, log_path=log).start()
        gc.collect()
    assert [str(w.message) for w in caught if str(log) in str(w.message)] == []  # no handle left to the collector
    assert log.stat().st_size > 0  # the child still wrote its error there


@pytest.mark.slow
def test_embedded_server_lifecycle_with_the_real_model(settings):
    server = EmbeddedLLMServer(settings.llm_gguf, n_ctx=1024, start_timeout=300)
    with server:
        assert server.running
        port = server.port
        from haystack.components.generators.chat import OpenAIChatGenerator
        from haystack.utils import Secret

        generator = OpenAIChatGenerator(api_key=Secret.from_token("sk-local"), model="local",
                                        api_base_url=server.base_url, generation_kwargs={"max_tokens": 16,
                                                                                         "temperature": 0})
        reply = generator.run(messages=[ChatMessage.from_user("1+1等于几？只回答数字。")])["replies"][0]
        assert "2" in reply.text
    assert not server.running
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0  # nothing listens any more


def kill(server: EmbeddedLLMServer) -> None:
    """SIGKILL the server's process, as a segfault or the out-of-memory killer would, and wait until it is gone."""
    os.kill(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while server.exit_code is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.exit_code == -signal.SIGKILL


@pytest.mark.slow
def test_an_embedded_server_that_died_is_restarted_on_its_port_and_the_call_retried(settings):
    component = LLMComponent()
    component.warm_up()  # starts (or reuses) the shared embedded server
    server = shared_server(settings.llm_gguf)
    port, pid = server.port, server.pid
    kill(server)
    call = component.chat([ChatMessage.from_user("1+1等于几？只回答数字。")], {"max_tokens": 8, "temperature": 0})
    assert call.error is None and "2" in call.text
    assert server.running and server.port == port and server.pid != pid


@pytest.mark.slow
def test_asking_for_the_shared_server_after_it_died_restarts_it_on_its_port(settings):
    server = shared_server(settings.llm_gguf, n_ctx=1024)
    port, pid = server.port, server.pid
    kill(server)
    again = shared_server(settings.llm_gguf, n_ctx=1024)
    assert again is server and again.running and again.port == port and again.pid != pid


@pytest.mark.slow
def test_two_requests_that_find_the_server_dead_both_get_an_answer(settings, monkeypatch):
    """Issue 19, bug 3: the second request found the server already restarted by the first, took that for a failed
    revive and put the endpoint in its 30 s cooldown right after it came back."""
    import threading

    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    components = [LLMComponent(), LLMComponent()]
    for component in components:
        component.warm_up()
    server = shared_server(settings.llm_gguf)
    kill(server)
    calls: list = [None, None]
    barrier = threading.Barrier(2)

    def ask(i: int) -> None:
        barrier.wait()
        calls[i] = components[i].chat([ChatMessage.from_user("1+1等于几？只回答数字。")],
                                      {"max_tokens": 8, "temperature": 0})

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert [call.error for call in calls] == [None, None]
    assert all("2" in call.text for call in calls)


@pytest.mark.slow
def test_the_shared_server_keeps_logprobs_only_once_the_llm_reranker_asks_for_them(settings):
    """llama.cpp keeps every prompt token's logits only to return logprobs (~1.1 GiB at its peak): the shared server
    starts without them, and the LLM reranker's warm-up restarts it with them on its port."""
    from haystack import Document
    from openai import OpenAI

    from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
    from llm_access.embedded_server import MODEL_ALIAS, stop_shared_server

    stop_shared_server()
    endpoint = resolve_endpoint(settings)
    server = shared_server(settings.llm_gguf)
    port = server.port
    assert not server.logprobs
    client = OpenAI(base_url=endpoint.base_url, api_key="sk-local")
    with pytest.raises(Exception, match="logprobs"):  # the server refuses what it does not keep
        client.chat.completions.create(model=MODEL_ALIAS, messages=[{"role": "user", "content": "是吗"}],
                                       max_tokens=1, logprobs=True, top_logprobs=5)
    ranker = LLMRelevanceRanker(top_n=1, max_workers=1)
    ranker.warm_up()
    assert shared_server(settings.llm_gguf) is server and server.logprobs and server.port == port
    article = Document(content="处理个人信息应当取得个人同意。", meta={"key": "个人信息保护法第十三条"})
    score = ranker.run(query="公司处理我的个人信息需要我同意吗",
                       documents=[article])["documents"][0].meta["llm_relevance"]
    assert 0.0 < score < 1.0  # a probability from the logprobs, not the 1/0 read from the text


def test_the_llama_cpp_child_drops_every_variable_its_server_would_read_as_a_setting():
    """Issue 46, bug 1: ``API_KEY`` (this project's API key) reached llama.cpp's server, which read it as its own
    key (pydantic-settings, any case) and refused the readiness check with 401."""
    from llm_access.server_child import without_server_settings

    environ = {"API_KEY": "k", "api_key": "k", "Port": "9", "PATH": "/bin", "DATA_DIR": "/d", "HF_HUB_OFFLINE": "1"}
    assert without_server_settings(environ, {"api_key", "port", "model"}) == {
        "PATH": "/bin", "DATA_DIR": "/d", "HF_HUB_OFFLINE": "1"}


@pytest.mark.slow
def test_the_embedded_server_starts_and_answers_when_api_key_is_set(settings, monkeypatch):
    """Issue 46, bug 1: with ``API_KEY`` set the embedded server never became ready (401 until the start timeout)."""
    monkeypatch.setenv("API_KEY", "the-api-key-of-this-project")
    with EmbeddedLLMServer(settings.llm_gguf, n_ctx=1024, start_timeout=60) as server:
        from haystack.components.generators.chat import OpenAIChatGenerator
        from haystack.utils import Secret

        generator = OpenAIChatGenerator(api_key=Secret.from_token("sk-local"), model="local",
                                        api_base_url=server.base_url, generation_kwargs={"max_tokens": 8})
        assert "2" in generator.run(messages=[ChatMessage.from_user("1+1等于几？只回答数字。")])["replies"][0].text


@pytest.mark.slow
def test_a_timed_out_call_stops_its_generation_and_the_next_call_is_answered(settings, monkeypatch):
    """Issue 46, bug 2: after a call timed out, llama.cpp went on generating its answer for nobody (~90 % CPU, every
    other request waiting). The timed-out call restarts the embedded server, which stops the generation; the
    endpoint is not put in its cooldown, since the server is ready again."""
    monkeypatch.setenv("LLM_TIMEOUT", "3")
    monkeypatch.setenv("LLM_COOLDOWN", "600")
    component = LLMComponent()
    component.warm_up()
    server = shared_server(settings.llm_gguf)
    pid = server.pid
    call = component.chat([ChatMessage.from_user("写一篇关于合同法的长文章，至少两千字。")],
                          {"max_tokens": 3000, "temperature": 0.7})
    assert call.error == "LLM 请求超时"
    assert server.running and server.pid != pid, "the generation that timed out was not stopped"
    again = component.chat([ChatMessage.from_user("1+1等于几？只回答数字。")], {"max_tokens": 8, "temperature": 0})
    assert again.error is None and "2" in again.text
