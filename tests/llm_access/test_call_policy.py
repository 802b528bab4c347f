"""Every caller of the LLM goes through the one call policy (`llm_access.call_policy`): after a failed call puts
the endpoint in its cooldown, none of them sends another request, and none of them crashes."""

import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from application.agent_mode import KnowledgeAgent
from components.evaluators.llm_quality_judge import LLMQualityJudge
from components.generators.answer_generator import AnswerGenerator
from components.generators.query_rewriter import QueryRewriter
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from components.routers.query_router import QueryRouter
from interfaces.chat_api import Condenser
from llm_access import call_policy
from llm_access.call_policy import LLMComponent

ARTICLE = Document(content="处理个人信息应当取得个人同意。", meta={"law": "中华人民共和国个人信息保护法",
                                                          "article_no": "第十三条", "key": "k13", "source": "law:pipl"})


def ask_router() -> None:
    route = QueryRouter().run(query="今天怎么样")["route"]  # short and unsure: the rules ask the LLM
    assert route["decided_by"] == "llm" and route["note"]


def ask_rewriter() -> None:
    assert QueryRewriter(rewrite_first_round=True).run(query="公司收集我的个人信息需要我同意吗")["queries"]


def ask_judge() -> None:
    assert LLMQualityJudge().run(query="需要同意吗", documents=[ARTICLE])["evaluation"]["error"]


def ask_answer() -> None:
    out = AnswerGenerator().run(messages=[ChatMessage.from_user("需要同意吗")], situation="sufficient")
    assert out["error"] and out["text"] == ""


def ask_ranker() -> None:
    ranked = LLMRelevanceRanker(top_n=1).run(query="需要同意吗", documents=[ARTICLE])["documents"]
    assert ranked[0].meta["llm_relevance"] == -1.0  # the retrieval order is kept


def ask_condenser() -> None:
    condenser = Condenser(role="light")
    question, _ = condenser.condense([{"role": "user", "content": "个人信息保护法第十三条是什么"}], "那第十四条呢？")
    assert question.endswith("那第十四条呢？")  # the history is prepended instead


class _NoRetrieval:
    name = "statutes"

    def __init__(self) -> None:
        self.pipelines = {"retrieve": None}

    def warnings_for(self, query: str, as_of: str | None = None, filters: dict | None = None) -> list[str]:
        return []


def ask_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    from application import agent_mode

    monkeypatch.setattr(agent_mode, "retrieve", lambda pipeline, queries, top_k, filters=None: [ARTICLE])
    result = KnowledgeAgent(_NoRetrieval()).ask("公司收集我的个人信息需要我同意吗")
    assert result.stop_reason == "llm_error" and "第十三条" in result.answer


CALLERS = {"router": ask_router, "rewriter": ask_rewriter, "judge": ask_judge, "answer": ask_answer,
           "ranker": ask_ranker, "condenser": ask_condenser, "agent": ask_agent}


@pytest.fixture
def llm_down(llm, monkeypatch):
    monkeypatch.setenv("LLM_COOLDOWN", "60")
    monkeypatch.setattr(call_policy, "COOLDOWNS", call_policy.EndpointCooldowns())
    llm.add_rule("", "服务不可用", status=500)
    first = LLMComponent()
    first.warm_up()
    assert first.chat([ChatMessage.from_user("你好")]).error  # the endpoint is now in its cooldown
    return llm


@pytest.mark.parametrize("name", list(CALLERS))
def test_every_llm_caller_gets_the_call_policy(llm_down, monkeypatch, name):
    before = len(llm_down.requests)
    caller = CALLERS[name]
    caller(monkeypatch) if name == "agent" else caller()
    assert len(llm_down.requests) == before, f"{name} called the LLM past the policy's cooldown"
