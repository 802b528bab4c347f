"""The scripted LLM's script (`harness.llm_script`): each stage's phrase is in that stage's system prompt and in no
other's (a rule for one stage never answers another), and `judge` is a reply the real judge reads, through the
scripted server, as the scores it was given."""

from __future__ import annotations

import pytest
from haystack import Document
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from components.evaluators import llm_quality_judge
from components.evaluators.llm_quality_judge import LLMQualityJudge
from components.generators import query_rewriter
from harness.llm_script import ANSWERER, JUDGE, REWRITER, judge
from harness.openai_server import ScriptedOpenAIServer
from pipelines import prompts

PIPL = "中华人民共和国个人信息保护法"
SYSTEM_PROMPTS = {REWRITER: query_rewriter.SYSTEM, JUDGE: llm_quality_judge.SYSTEM, ANSWERER: prompts.ANSWER_SYSTEM}


@pytest.mark.parametrize("phrase", list(SYSTEM_PROMPTS))
def test_each_phrase_names_one_stage_only(phrase: str) -> None:
    assert [p for p, system in SYSTEM_PROMPTS.items() if phrase in system] == [phrase]
    assert phrase not in prompts.ANSWER_USER and phrase not in query_rewriter.RETRY


@pytest.fixture
def scripted_judge():
    with ScriptedOpenAIServer(default="不是评分") as server:
        generator = OpenAIChatGenerator(api_key=Secret.from_token("unused"), model="local",
                                        api_base_url=server.base_url, timeout=5, max_retries=0)
        yield server, LLMQualityJudge(chat_generator=generator, pass_score=32)


def evaluate(judge_component: LLMQualityJudge) -> dict:
    evidence = [Document(content="处理个人信息应当取得个人同意。", meta={"law": PIPL, "article_no": "第十三条"})]
    return judge_component.run(query="公司收集我的个人信息需要我同意吗", documents=evidence)["evaluation"]


@pytest.mark.parametrize(("each", "passed"), [(8, True), (7, False), (0, False), (10, True)])
def test_a_judge_reply_gives_each_dimension_its_score(scripted_judge, each: int, passed: bool) -> None:
    server, component = scripted_judge
    server.add_rule(JUDGE, judge(each, "缺少关于同意例外的规定"))
    evaluation = evaluate(component)
    assert evaluation["error"] is None
    assert set(evaluation["scores"].values()) == {float(each)} and evaluation["total"] == 4 * each
    assert evaluation["passed"] is passed
    assert evaluation["missing"] == "缺少关于同意例外的规定" and evaluation["reasoning"] == "理由"
    assert len(server.calls(JUDGE)) == 1


def test_without_a_rule_the_judge_gets_no_scores(scripted_judge) -> None:
    """The default reply is not a judge reply: the rule, not luck, makes the judge pass above."""
    _, component = scripted_judge
    evaluation = evaluate(component)
    assert evaluation["passed"] is False and evaluation["error"] == "评估输出不是 JSON"
