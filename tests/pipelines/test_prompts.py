"""The answer prompt per situation: what the model is asked to write."""

import pytest
from haystack import Document
from haystack.components.builders import ChatPromptBuilder

from pipelines.prompts import ANSWER_TEMPLATE

EVIDENCE = [Document(content="处理个人信息应当取得个人同意。", meta={"law": "个人信息保护法", "article_no": "第十三条",
                                                                   "evidence_label": "1"})]
CONSULTATION = ("【问题分析】", "【相关法条】", "【法律解释】", "【建议措施】", "【注意事项】", "【免责声明】")
PARTIAL = ("【初步结论】", "【相关法条】", "【尚缺信息】", "【建议】")


def render(situation: str, notes: str = "") -> str:
    builder = ChatPromptBuilder(template=ANSWER_TEMPLATE, required_variables=["query", "evidence", "situation"])
    messages = builder.run(query="公司收集我的个人信息需要我同意吗", evidence=EVIDENCE, situation=situation,
                           notes=notes)["prompt"]
    return messages[-1].text or ""


def in_order(prompt: str, headings: tuple[str, ...]) -> bool:
    positions = [prompt.index(heading) for heading in headings]
    return positions == sorted(positions)


@pytest.mark.parametrize("situation", ["sufficient", "unjudged"])
def test_passed_or_plain_evidence_gets_the_consultation_structure(situation: str) -> None:
    prompt = render(situation)
    assert in_order(prompt, CONSULTATION)
    assert "《个人信息保护法》第十三条：处理个人信息应当取得个人同意。" in prompt
    assert "现有资料可能不足" not in prompt and "【尚缺信息】" not in prompt


@pytest.mark.parametrize("situation", ["sufficient", "unjudged"])
def test_the_analysis_asks_for_the_relation_and_the_disputed_point_not_the_question_again(situation: str) -> None:
    """Issue 50, item 6: 【问题分析】 restated the question half the time
    (research/reports/analysis_prompt_study.md)."""
    analysis = next(line for line in render(situation).splitlines() if line.startswith("【问题分析】"))
    assert "法律关系" in analysis and "争议焦点" in analysis and "不要复述问题" in analysis


def test_partial_evidence_asks_for_a_conclusion_what_is_missing_and_a_rephrasing() -> None:
    """Issue 20: a partial answer opened with a stock sentence (现有资料可能不足以完整回答); now it concludes."""
    prompt = render("partial", notes="评估认为还缺少：例外情形")
    assert in_order(prompt, PARTIAL)
    assert "现有资料可能不足" not in prompt and "先直接回答问题" in prompt
    assert "说明：评估认为还缺少：例外情形" in prompt
    assert "【问题分析】" not in prompt


def test_web_results_are_supplementary_and_ranked_below_statutes() -> None:
    prompt = render("supplemented")
    assert "网页资料只作补充并标注[网页n]" in prompt
    assert in_order(prompt, ("【相关法条】", "【补充资料（网页，仅供参考）】", "【免责声明】"))


@pytest.mark.parametrize("situation", ["sufficient", "supplemented", "partial"])
def test_the_model_names_articles_instead_of_copying_them(situation: str) -> None:
    """The store's text is rendered into 【相关法条】 (helpers.checks.answer_check); the model is asked not to copy
    it."""
    prompt = render(situation)
    assert "不要抄写条文" in prompt and "引用最相关的法条原文" not in prompt
    assert "属于哪一档" in prompt  # tiered rules are applied to the question's facts
