"""Text that came from a user (`helpers.checks.user_text`): `lone_surrogate_at` (exactly the text UTF-8 cannot
encode), `has_visible_character` (controls, format characters, spaces of every kind and private use show nothing)
and `shown` (a value's repr for an error message, cut to its limit with the full length named, on one line)."""

import json

import pytest

from helpers.checks.user_text import has_visible_character, lone_surrogate_at, shown


def test_the_docstring_examples():
    assert lone_surrogate_at("\ud800个人信息") == 0
    assert has_visible_character("\u200b\x00") is False
    assert shown("x" * 100) == "'" + "x" * 39 + "… (102 characters)"


@pytest.mark.parametrize(("text", "position"), [
    ("个人\udfff信息", 2),
    ("个人信息\ud83d", 4),  # the first half of a pair, alone
    ("\udc00\ud800", 0),  # two halves in the wrong order are two lone ones
    (json.loads('"同意\\udc00"'), 2),  # what JSON lets a client send
])
def test_lone_surrogate_at_names_the_first_position(text, position):
    assert lone_surrogate_at(text) == position


@pytest.mark.parametrize("text", [
    "", "《中华人民共和国个人信息保护法》第十四条", "同意😀", json.loads('"\\ud83d\\ude00"'),  # a pair: one character
])
def test_text_without_a_lone_surrogate_is_none(text):
    assert lone_surrogate_at(text) is None


@pytest.mark.parametrize("text", ["个人\ud800信息", "同意😀", "", "\udfff", "第一千零三十二条"])
def test_a_lone_surrogate_is_exactly_what_utf8_cannot_encode(text):
    try:
        text.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False
    assert (lone_surrogate_at(text) is None) == encodable


@pytest.mark.parametrize("text", [
    "", "\x00", "\x00\x00", "\u200b\u200d", "\ufeff", "\u3000", "\u00a0", " \t\n\r", "\u2028\u2029",
    "\u202e", "\ue000", "\U000e0001", "\ufeff \u3000",
])
def test_text_that_shows_nothing(text):
    assert has_visible_character(text) is False


@pytest.mark.parametrize("text", ["个", "\u3000个人信息\u200b", "a", "3", "。", "😀", "\x00第十四条\x00"])
def test_text_that_shows_something(text):
    assert has_visible_character(text) is True


def test_shown_keeps_a_short_value_whole_and_names_the_length_of_a_long_one():
    assert shown("个人信息") == "'个人信息'"
    assert shown(None) == "None"
    assert shown({"operator": "AND"}) == "{'operator': 'AND'}"
    assert shown("x" * 38) == "'" + "x" * 38 + "'"  # a repr of exactly 40 characters
    assert shown("x" * 39) == "'" + "x" * 39 + "… (41 characters)"


def test_shown_honours_its_limit():
    assert shown("中华人民共和国个人信息保护法", limit=5) == "'中华人民… (16 characters)"
    assert shown(12345, limit=5) == "12345"


def test_shown_of_a_megabyte_is_short_and_one_line():
    text = shown("第一条\n" * 250_000)
    assert len(text) < 80 and "\n" not in text
    assert text.endswith("… (1250002 characters)")
