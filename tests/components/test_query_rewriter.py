"""QueryRewriter's defaults agree with the settings' (issue 19, bug 9)."""

from components.generators.query_rewriter import QueryRewriter
from config.settings import Settings


def test_the_component_default_searches_round_one_as_asked_like_the_settings_default():
    rewriter = QueryRewriter()  # not warmed up: a call to the LLM would fail
    assert rewriter.rewrite_first_round is Settings().rewrite_first_round is False
    result = rewriter.run(query="公司收集我的个人信息需要我同意吗")
    assert result["queries"] == ["公司收集我的个人信息需要我同意吗"]
    assert result["plan"]["llm_calls"] == 0 and result["plan"]["rewrite"]["status"] == "skipped"
