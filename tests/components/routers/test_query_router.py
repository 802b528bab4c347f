"""QueryRouter: rules first, the LLM only when unsure, anything unclear goes to retrieval."""

import pytest
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from components.routers.query_router import QueryRouter
from harness.openai_server import ScriptedOpenAIServer


@pytest.fixture
def llm():
    with ScriptedOpenAIServer() as server:
        yield server


def router(server: ScriptedOpenAIServer) -> QueryRouter:
    generator = OpenAIChatGenerator(api_key=Secret.from_token("unused"), model="local", api_base_url=server.base_url,
                                    timeout=2, max_retries=0)
    return QueryRouter(chat_generator=generator)


@pytest.mark.parametrize("query", ["你好！", "谢谢", "hello", "再见~"])
def test_greetings_are_answered_by_rule(llm, query):
    out = router(llm).run(query=query)
    assert out["reply"] and out["route"] == {"route": "chitchat", "decided_by": "rule", "llm_calls": 0, "seconds": 0.0}
    assert llm.requests == []


def test_legal_questions_go_to_retrieval_by_rule(llm):
    out = router(llm).run(query="公司收集我的个人信息需要我同意吗")
    assert out["query"] == "公司收集我的个人信息需要我同意吗" and out["route"]["decided_by"] == "rule"
    assert llm.requests == []


def test_unsure_queries_ask_the_llm(llm):
    llm.add_rule("今天天气不错", '{"route": "chitchat"}')
    out = router(llm).run(query="今天天气不错")
    assert out["reply"] and out["route"]["decided_by"] == "llm" and out["route"]["llm_calls"] == 1


@pytest.mark.parametrize(("reply", "status"), [("我觉得是闲聊", 200), ('{"route": "闲聊"}', 200), ("x", 500)])
def test_malformed_or_failed_llm_output_means_retrieval(llm, reply, status):
    llm.add_rule("", reply, status=status)
    out = router(llm).run(query="邻居装修")
    assert out["query"] == "邻居装修" and out["route"]["route"] == "retrieval"
    if status == 200 and not reply.startswith("{"):
        assert "无法解析" in out["route"]["note"]
    if status == 500:
        assert out["route"]["note"]
