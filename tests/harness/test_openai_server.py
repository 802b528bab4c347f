"""ScriptedOpenAIServer, the LLM stand-in, spoken to by the real openai client: rules chosen by what the messages
contain, replies in turn, errors, streaming, tool calls, log-probabilities, the record of requests, and a stream
the client leaves. How the product's components use it is in their own tests."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from harness.openai_server import TOOL_PREFIX, ScriptedOpenAIServer


@pytest.fixture
def server():
    with ScriptedOpenAIServer(default="默认回答") as scripted:
        yield scripted


@pytest.fixture
def client(server: ScriptedOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0, timeout=5)


def ask(client: openai.OpenAI, text: str, system: str = "你是助手", **kwargs):
    return client.chat.completions.create(model="scripted", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": text}], **kwargs)


def reply(client: openai.OpenAI, text: str, system: str = "你是助手") -> str:
    return ask(client, text, system).choices[0].message.content


def test_the_first_rule_whose_text_occurs_in_the_messages_answers(server: ScriptedOpenAIServer,
                                                                   client: openai.OpenAI) -> None:
    server.add_rule("评估员", "评分")
    server.add_rule(("改写", "个人信息"), "改写了个人信息")  # every part must occur
    server.add_rule("个人信息", "其他回答")
    assert reply(client, "个人信息怎么办", system="你是法律检索质量评估员") == "评分"  # matched in the system message
    assert reply(client, "请改写：个人信息") == "改写了个人信息"
    assert reply(client, "请改写：合同") == "默认回答"  # only one part of the tuple
    assert reply(client, "个人信息") == "其他回答"
    completion = ask(client, "没有规则")
    assert completion.choices[0].finish_reason == "stop" and completion.model == "scripted"


def test_a_list_of_replies_is_used_in_turn_and_the_last_repeats(server: ScriptedOpenAIServer,
                                                                 client: openai.OpenAI) -> None:
    server.add_rule("判断", ["第一次", "第二次", "以后"])
    assert [reply(client, "判断") for _ in range(4)] == ["第一次", "第二次", "以后", "以后"]


def test_a_list_of_replies_given_twice_starts_from_its_first_each_time() -> None:
    replies = ["第一次", "第二次"]
    answers = []
    for _ in range(2):  # two tests sharing a module's list of replies
        with ScriptedOpenAIServer() as server:
            server.add_rule("判断", replies)
            client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0, timeout=5)
            answers.append(reply(client, "判断"))
    assert answers == ["第一次", "第一次"]


def test_every_request_is_recorded_and_found_by_what_its_messages_contain(server: ScriptedOpenAIServer,
                                                                          client: openai.OpenAI) -> None:
    reply(client, "个人信息保护法第十三条")
    ask(client, "合同法", temperature=0.2, max_tokens=7)
    assert len(server.requests) == 2
    assert server.requests[1]["temperature"] == 0.2 and server.requests[1]["max_tokens"] == 7
    found, = server.calls("第十三条")  # the Chinese text as written, not \\u-escaped
    assert found["messages"][1] == {"role": "user", "content": "个人信息保护法第十三条"}
    assert server.calls("民法典") == []


def test_an_error_status_is_an_openai_api_error_with_the_reply_as_message(server: ScriptedOpenAIServer,
                                                                         client: openai.OpenAI) -> None:
    server.add_rule("过载", "model overloaded", status=503)
    server.add_rule("密钥", "invalid api key", status=401)
    with pytest.raises(openai.InternalServerError, match="model overloaded") as overloaded:
        reply(client, "过载了")
    assert overloaded.value.status_code == 503
    with pytest.raises(openai.AuthenticationError, match="invalid api key"):
        reply(client, "密钥")


def test_a_streamed_reply_comes_in_chunks_of_eight_characters(server: ScriptedOpenAIServer,
                                                              client: openai.OpenAI) -> None:
    text = "根据《个人信息保护法》第十三条，处理个人信息应当取得个人同意。"
    server.add_rule("流式", text)
    server.add_rule("截断", "写到一半", finish_reason="length")
    chunks = list(ask(client, "流式", stream=True))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert "".join(pieces) == text and all(len(p) == 8 for p in pieces[:-1])
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert list(ask(client, "截断", stream=True))[-1].choices[0].finish_reason == "length"
    default = list(ask(client, "没有规则", stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in default) == "默认回答"


def test_a_tool_prefixed_reply_is_a_tool_call(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    arguments = {"query": "个人信息 同意", "top_k": 3}
    server.add_rule("检索", TOOL_PREFIX + json.dumps({"name": "search_statutes", "arguments": arguments},
                                                    ensure_ascii=False))
    choice = ask(client, "请检索").choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call, = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "search_statutes"
    assert json.loads(call.function.arguments) == arguments and call.id.startswith("call_")


def test_log_probabilities_are_sent_only_when_asked_for(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    server.add_rule("相关吗", "是", top_logprobs=[("是", -0.1), ("否", -2.4)])
    plain = ask(client, "相关吗").choices[0]
    assert plain.logprobs is None
    first, = ask(client, "相关吗", logprobs=True, top_logprobs=2).choices[0].logprobs.content
    assert (first.token, first.logprob) == ("是", -0.1)
    assert [(t.token, t.logprob) for t in first.top_logprobs] == [("是", -0.1), ("否", -2.4)]


def test_the_models_list_answers(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["scripted"]


def test_a_stream_the_client_leaves_is_recorded_as_aborted(server: ScriptedOpenAIServer) -> None:
    server.add_rule("长回答", "很长的回答。" * 40, chunk_delay=0.02)
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "请给长回答"}]}
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body, timeout=5) as response:
        first = next(response.iter_lines())
    assert first.startswith("data: ")
    assert server.aborted.wait(5)
    assert server.aborted_requests == [body]
