"""Tolerant JSON extraction from LLM replies (`helpers.checks.llm_json.parse_json_object`): code fences with or
without a language tag, prose around the object, trailing commas, braces and escapes inside strings, the first object
of several, and None for replies that hold no JSON object (a list, a string, nothing, broken JSON)."""

import pytest

from helpers.checks.llm_json import parse_json_object


def test_the_docstring_example():
    assert parse_json_object('好的：```json\n{"route": "chitchat",}\n```') == {"route": "chitchat"}


def test_a_bare_object():
    assert parse_json_object('{"route": "statute", "laws": ["中华人民共和国个人信息保护法"]}') == {
        "route": "statute", "laws": ["中华人民共和国个人信息保护法"]}


def test_a_fence_without_a_language_tag():
    assert parse_json_object('```\n{"relevance": 4, "missing": ""}\n```') == {"relevance": 4, "missing": ""}


def test_prose_around_the_object_is_ignored():
    reply = '根据证据判断如下：\n{"reasoning": "证据包含第十四条", "relevance": 5}\n以上为评估结果。'
    assert parse_json_object(reply) == {"reasoning": "证据包含第十四条", "relevance": 5}


def test_trailing_commas_at_every_level_are_forgiven():
    reply = '{"query": "个人信息 同意", "laws": ["个人信息保护法", "民法典",], "meta": {"k": 1,},}'
    assert parse_json_object(reply) == {
        "query": "个人信息 同意", "laws": ["个人信息保护法", "民法典"], "meta": {"k": 1}}


def test_braces_and_escapes_inside_strings_do_not_end_the_object():
    assert parse_json_object('{"reasoning": "格式为 {法名}第X条", "relevance": 3}') == {
        "reasoning": "格式为 {法名}第X条", "relevance": 3}
    assert parse_json_object('{"reasoning": "多出一个 } 符号", "relevance": 3}') == {
        "reasoning": "多出一个 } 符号", "relevance": 3}
    assert parse_json_object('{"reasoning": "答案写了\\"同意\\"", "relevance": 4}') == {
        "reasoning": '答案写了"同意"', "relevance": 4}
    assert parse_json_object('{"path": "C:\\\\法规\\\\", "ok": true}') == {"path": "C:\\法规\\", "ok": True}


def test_prose_braces_before_the_object_are_skipped():
    assert parse_json_object('请按{法名}格式回答：{"route": "statute"}') == {"route": "statute"}
    assert parse_json_object('好的} 结果：{"route": "chitchat"}') == {"route": "chitchat"}


def test_the_first_of_several_objects_is_returned():
    assert parse_json_object('第一次：{"route": "chitchat"} 更正：{"route": "statute"}') == {"route": "chitchat"}


def test_a_fenced_object_is_preferred_to_one_in_the_prose_before_it():
    reply = '例如 {"route": "example"}，我的回答：\n```json\n{"route": "statute"}\n```'
    assert parse_json_object(reply) == {"route": "statute"}


def test_a_broken_fence_falls_back_to_the_object_in_the_prose():
    reply = '{"route": "statute"}\n```json\n这里不是 JSON\n```'
    assert parse_json_object(reply) == {"route": "statute"}


def test_an_object_inside_a_list_is_found():
    assert parse_json_object('[{"key": "中华人民共和国民法典第一千零三十二条"}]') == {
        "key": "中华人民共和国民法典第一千零三十二条"}


@pytest.mark.parametrize("reply", [
    None, "", "没有 JSON 的回答", "[1, 2]", '"statute"', "null", "42",
    "{not json}", '{"route": "statute"', '```json\n{"route": \n```', "{'route': 'statute'}",
])
def test_no_json_object_is_none(reply):
    assert parse_json_object(reply) is None


def test_an_odd_escaped_quote_inside_a_string_does_not_hide_the_object():
    """_balanced_objects reset `escape` before testing it: an escaped quote ended the string, and one in a value
    (an odd count) hid the whole object."""
    reply = '{"reasoning": "答案只写了\\"同意，未引用条文", "relevance": 3}'
    assert parse_json_object(reply) == {"reasoning": '答案只写了"同意，未引用条文', "relevance": 3}


def test_the_trailing_comma_repair_leaves_string_values_alone():
    reply = '{"missing": "引用了[第十三条, ]", "relevance": 3,}'
    assert parse_json_object(reply) == {"missing": "引用了[第十三条, ]", "relevance": 3}
