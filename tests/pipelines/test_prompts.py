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


def test_partial_evidence_asks_for_the_caveat_what_is_missing_and_a_rephrasing() -> None:
    prompt = render("partial", notes="评估认为还缺少：例外情形")
    assert in_order(prompt, PARTIAL)
    assert "开头写“现有资料可能不足以完整回答。”" in prompt
    assert "说明：评估认为还缺少：例外情形" in prompt
    assert "【问题分析】" not in prompt


def test_web_results_are_supplementary_and_ranked_below_statutes() -> None:
    prompt = render("supplemented")
    assert "网页资料只作补充并标注[网页n]" in prompt
    assert in_order(prompt, ("【相关法条】", "【补充资料（网页，仅供参考）】", "【免责声明】"))
