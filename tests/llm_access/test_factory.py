"""`llm_access.factory`: which LLM the project talks to and the chat generators it builds, over HTTP to the scripted
OpenAI-compatible server (DeepSeek's defaults and a configured server's model are in test_embedded_server.py; keys
read from an env file in config/test_settings.py). The embedded server, chosen last, is not started here."""

import os

import pytest
from haystack.dataclasses import ChatMessage, StreamingChunk

from config.settings import Settings
from harness.openai_server import ScriptedOpenAIServer
from llm_access.factory import (
    LOCAL_KEY_ENV,
    LOCAL_KEY_PLACEHOLDER,
    make_chat_generator,
    resolve_endpoint,
    uses_api_model,
)


def ask(role: str = "main", **options) -> str:
    generator = make_chat_generator(Settings.from_env(), role=role, **options)
    return generator.run(messages=[ChatMessage.from_user("你好")])["replies"][0].text


@pytest.fixture(autouse=True)
def no_local_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without ``LLM_API_KEY``; the placeholder a test's endpoint sets is removed after it."""
    monkeypatch.setenv(LOCAL_KEY_ENV, "recorded")  # so that the teardown restores what was there before
    monkeypatch.delenv(LOCAL_KEY_ENV)


def test_an_api_model_is_a_deepseek_key_or_a_server_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decided without starting anything; a key of blanks is no key."""
    for name in ("DEEPSEEK_API_KEY", "LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert not uses_api_model(Settings.from_env())
    assert uses_api_model(Settings(llm_base_url="http://127.0.0.1:9/v1"))
    monkeypatch.setenv("DEEPSEEK_API_KEY", "  ")
    assert not uses_api_model(Settings.from_env())
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    assert uses_api_model(Settings.from_env())


def test_a_blank_deepseek_key_falls_through_to_the_configured_server(llm: ScriptedOpenAIServer,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", " \t")
    monkeypatch.setenv("LLM_MODEL", "scripted-model")
    endpoint = resolve_endpoint()
    assert (endpoint.kind, endpoint.base_url, endpoint.model, endpoint.api_key_env) == (
        "server", llm.base_url, "scripted-model", LOCAL_KEY_ENV)


def test_a_local_server_gets_a_placeholder_key_unless_one_is_set(llm: ScriptedOpenAIServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI client refuses to start without a key, which a local server ignores."""
    assert ask() == "好的"
    assert os.environ[LOCAL_KEY_ENV] == LOCAL_KEY_PLACEHOLDER
    monkeypatch.setenv(LOCAL_KEY_ENV, "sk-mine")
    resolve_endpoint()
    assert os.environ[LOCAL_KEY_ENV] == "sk-mine"


def test_the_light_role_asks_the_light_model_when_there_is_one(llm: ScriptedOpenAIServer,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_MODEL", "big")
    ask(role="light")  # no light model configured: the main one
    monkeypatch.setenv("LLM_LIGHT_MODEL", "small")
    ask(role="light")
    ask()
    assert [request["model"] for request in llm.requests] == ["big", "small", "big"]


def test_deepseek_is_asked_at_its_configured_url_with_its_model_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedOpenAIServer(default="深度求索") as deepseek:
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
        monkeypatch.setenv("DEEPSEEK_BASE_URL", deepseek.base_url)
        monkeypatch.setenv("DEEPSEEK_MODEL", "deepseek-reasoner")
        monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")  # the key wins over a configured server
        monkeypatch.setenv("LLM_LIGHT_MODEL", "deepseek-chat")
        assert ask() == "深度求索" and ask(role="light") == "深度求索"
    assert [request["model"] for request in deepseek.requests] == ["deepseek-reasoner", "deepseek-chat"]


def test_generation_settings_reach_the_request_and_replies_stream(llm: ScriptedOpenAIServer) -> None:
    llm.add_rule("讲个故事", "从前有座山，山里有座庙。")
    chunks: list[StreamingChunk] = []
    generator = make_chat_generator(generation_kwargs={"temperature": 0, "max_tokens": 64},
                                    streaming_callback=chunks.append)
    reply = generator.run(messages=[ChatMessage.from_user("讲个故事")])["replies"][0].text
    assert reply == "".join(chunk.content for chunk in chunks) == "从前有座山，山里有座庙。"
    request = llm.requests[-1]
    assert (request["temperature"], request["max_tokens"], request["stream"]) == (0, 64, True)


def test_a_server_is_retried_as_configured_and_times_out_as_configured(llm: ScriptedOpenAIServer,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An API server's failures are retried (``LLM_MAX_RETRIES``); only the embedded one is never retried."""
    monkeypatch.setenv("LLM_MAX_RETRIES", "1")
    monkeypatch.setenv("LLM_TIMEOUT", "7.5")
    llm.add_rule("重试", ["服务器忙", "好了"], status=503)
    generator = make_chat_generator()
    assert (generator.timeout, generator.max_retries) == (7.5, 1)
    with pytest.raises(Exception, match="好了"):  # the error of the retry, the last try
        generator.run(messages=[ChatMessage.from_user("重试")])
    assert len(llm.calls("重试")) == 2  # the first try and one retry
