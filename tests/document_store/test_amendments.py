"""`parse_instruction`, the reader of an amending instrument's articles: deletions, partial changes, several
articles, what is not an instruction to amend the law, the quoted new text, two instruction forms of the real
刑法修正案 (a whole 之一 article rewritten, two articles added at once) and each target's part of the new text
(`Change.text_for`). The common forms (修改为, 增加一条 作为…之一, 将该条修改为) and a mere reference to the law are
in tests/helpers/statutes/test_versions.py."""

from __future__ import annotations

import pytest

from document_store.amendments import Change, parse_instruction


@pytest.mark.parametrize("text", ["删去刑法第二百九十九条。", "删除刑法第二百九十九条第二款。"])
def test_a_deletion_changes_part_of_the_article_and_brings_no_text(text: str) -> None:
    assert parse_instruction(text, "刑法") == Change(("第二百九十九条",), False, "")


def test_a_paragraph_of_an_added_article_is_a_partial_change_of_that_article() -> None:
    change = parse_instruction("将刑法第一百七十五条之一第一款修改为：“违反规定……”", "刑法")
    assert change == Change(("第一百七十五条之一",), False, "违反规定……")


def test_several_articles_are_named_once_each_in_the_order_written() -> None:
    assert parse_instruction("将刑法第一百条第一款、第一百条第二款修改为：“甲”", "刑法").targets == ("第一百条",)
    change = parse_instruction("将刑法第一百五十二条第一款、第一百五十一条第二款修改为：“乙”", "刑法")
    assert change.targets == ("第一百五十二条", "第一百五十一条") and not change.whole


@pytest.mark.parametrize(("text", "law_short"), [
    ("将刑法第二百六十四条修改为：“盗窃公私财物……”", "民法典"),  # an instruction to amend another law
    ("在刑法第一编第三章中增加一节：“……”", "刑法"),  # no article named
    ("本修正案自公布之日起施行。", "刑法"),
    ("", "刑法"),
    ("将某法X试行第三条修改为：“新”", "某法.试行"),  # the name is matched literally, not as a pattern
])
def test_what_is_no_instruction_to_amend_an_article_of_the_law_is_none(text: str, law_short: str) -> None:
    assert parse_instruction(text, law_short) is None


def test_a_name_with_brackets_and_plain_ascii_punctuation_are_read() -> None:
    assert parse_instruction('  将某法(试行)第三条修改为:"新的第三条。"', "某法(试行)") == Change(
        ("第三条",), True, "新的第三条。")


def test_the_new_text_keeps_its_lines_without_quotes_indents_or_blank_lines() -> None:
    text = "将刑法第二百六十四条修改为：\n“第一款内容。\n\n　 第二款内容。”\n"
    assert parse_instruction(text, "刑法").new_text == "第一款内容。\n第二款内容。"


def test_rewriting_a_whole_added_article_replaces_it() -> None:
    change = parse_instruction("将刑法第二百五十三条之一修改为：“违反国家有关规定……”", "刑法")
    assert change == Change(("第二百五十三条之一",), True, "违反国家有关规定……")


def test_two_articles_added_at_once_are_both_targets() -> None:
    change = parse_instruction("在刑法第二百八十七条后增加二条，作为第二百八十七条之一、第二百八十七条之二：\n"
                               "“第二百八十七条之一 利用信息网络……”\n“第二百八十七条之二 明知他人……”", "刑法")
    assert change.targets == ("第二百八十七条之一", "第二百八十七条之二") and change.whole


def test_each_of_several_articles_gets_its_own_part_of_the_new_text() -> None:
    change = parse_instruction("在刑法第二百八十七条后增加二条，作为第二百八十七条之一、第二百八十七条之二：\n"
                               "“第二百八十七条之一\u3000利用信息网络……\n“单位犯前款罪的……\n"
                               "“第二百八十七条之二\u3000明知他人……”", "刑法")
    assert change.text_for("第二百八十七条之一") == "利用信息网络……\n单位犯前款罪的……"
    assert change.text_for("第二百八十七条之二") == "明知他人……"
    rewritten = parse_instruction("将刑法第一百条、第一百零一条修改为：\n“第一百条\n甲。”\n“第一百零一条 乙。”", "刑法")
    assert rewritten.whole and rewritten.text_for("第一百条") == "甲。" and rewritten.text_for("第一百零一条") == "乙。"


def test_the_new_text_is_whole_for_one_target_or_when_no_line_opens_with_the_targets_number() -> None:
    one = parse_instruction("将刑法第二条修改为：“第二条 第一款。”", "刑法")
    assert one.text_for("第二条") == "第二条 第一款。"
    several = parse_instruction("将刑法第一百五十二条第一款、第一百五十一条第二款修改为：“乙”", "刑法")
    assert several.text_for("第一百五十一条") == "乙"
