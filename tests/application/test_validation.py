"""`validate_query`, the question check the CLI and the API share: what it returns, and each refusal's message."""

import pytest

from application.validation import MAX_QUERY_CHARS, SAMPLE_QUESTION, validate_query


def test_a_question_comes_back_stripped_with_its_inner_spacing_kept() -> None:
    assert validate_query("  公司收集我的个人信息 需要我同意吗 \n") == "公司收集我的个人信息 需要我同意吗"
    assert validate_query("\u3000第十三条\u3000") == "第十三条"  # the ideographic space is whitespace too


@pytest.mark.parametrize("query", ["", "   ", "\n\t\r", "\x00", "\u200b\u200d", " \ufeff\u2060 "])
def test_a_question_that_shows_nothing_is_empty_and_the_message_gives_an_example(query: str) -> None:
    with pytest.raises(ValueError) as error:
        validate_query(query)
    assert str(error.value) == f"the query is empty; ask a question, e.g. {SAMPLE_QUESTION}"


def test_invisible_characters_beside_a_visible_one_are_accepted() -> None:
    assert validate_query("\u200b问") == "\u200b问"


def test_the_limit_counts_the_stripped_question() -> None:
    at_limit = "法" * MAX_QUERY_CHARS
    assert validate_query(f"   {at_limit}   ") == at_limit
    with pytest.raises(ValueError) as error:
        validate_query(at_limit + "律")
    assert str(error.value) == f"the query has {MAX_QUERY_CHARS + 1} characters; the limit is {MAX_QUERY_CHARS}"


def test_a_lone_surrogate_is_refused_with_its_position_after_stripping() -> None:
    with pytest.raises(ValueError, match="not valid Unicode text: a lone surrogate at character 2$"):
        validate_query("  个人\udc80信息")


def test_a_lone_surrogate_is_named_even_where_it_is_all_there_is() -> None:
    """A surrogate shows nothing either: the message says what is wrong with it, not that the question is empty."""
    with pytest.raises(ValueError, match="lone surrogate at character 0"):
        validate_query("\ud800")


def test_a_character_beyond_the_basic_plane_is_text_not_a_surrogate() -> None:
    assert validate_query("表情😀") == "表情😀"
