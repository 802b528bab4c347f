"""QueryRewriter's defaults agree with the settings' (issue 19, bug 9)."""

import pytest

from components.generators.query_rewriter import QueryRewriter
from config.settings import Settings


def test_the_component_default_searches_round_one_as_asked_like_the_settings_default():
    rewriter = QueryRewriter()  # not warmed up: a call to the LLM would fail
    assert rewriter.rewrite_first_round is Settings().rewrite_first_round is False
    result = rewriter.run(query="公司收集我的个人信息需要我同意吗")
    assert result["queries"] == ["公司收集我的个人信息需要我同意吗"]
    assert result["plan"]["llm_calls"] == 0 and result["plan"]["rewrite"]["status"] == "skipped"


def test_long_question_default_agrees_with_the_settings_and_is_validated():
    assert QueryRewriter().long_question_chars == Settings().long_question_chars
    assert not QueryRewriter().rewrites_first_round("我" * 200)  # by default long questions are searched as asked
    with pytest.raises(ValueError, match="long_question_chars must be >= 0"):
        QueryRewriter(long_question_chars=-1)


def test_only_a_question_at_least_long_question_chars_long_is_rewritten_in_round_one():
    rewriter = QueryRewriter(long_question_chars=10)
    assert not rewriter.rewrites_first_round("同意吗")
    assert rewriter.rewrites_first_round("公司收集个人信息要同意吗")  # 12 characters
    assert not rewriter.rewrites_first_round("  同意吗  " + " " * 20)  # spaces are not the question
    assert not QueryRewriter(long_question_chars=0).rewrites_first_round("很" * 500)
    assert QueryRewriter(rewrite_first_round=True).rewrites_first_round("同意吗")


def test_round_trip_keeps_the_long_question_threshold():
    data = QueryRewriter(long_question_chars=40, max_variants=2).to_dict()
    restored = QueryRewriter.from_dict(data)
    assert (restored.long_question_chars, restored.max_variants) == (40, 2)
