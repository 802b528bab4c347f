"""The version policy (`helpers.statutes.versions`), the amendment reader and the statute database's versions."""

import pytest
from haystack import Document
from haystack.utils.filters import document_matches_filter

from document_store.amendments import parse_instruction
from document_store.statute_db import StatuteDB
from helpers.statutes.labels import article_key, key_label, key_law
from helpers.statutes.versions import (
    OPEN_END,
    parse_as_of,
    selects_versions,
    version_filter,
    version_mark,
    with_versions,
)

CRIMINAL = "中华人民共和国刑法"
TRADEMARK = "中华人民共和国商标法"
OLD = {"in_force": False, "valid_from": 20190423, "valid_to": 20270101, "version_date": "2019-04-23"}
NOW = {"in_force": True, "valid_from": 20270101, "valid_to": OPEN_END}
REPEALED = {"in_force": False, "valid_from": 19970101, "valid_to": OPEN_END, "status": "已废止"}


@pytest.mark.parametrize("bad", ["2020-13-01", "2020/01/01", "yesterday", "2021-02-29", "20200101"])
def test_a_malformed_date_is_a_one_line_error(bad):
    with pytest.raises(ValueError, match="as_of must be a date written YYYY-MM-DD") as error:
        parse_as_of(bad)
    assert "\n" not in str(error.value)


def test_dates_parse_to_integers_and_blank_means_today():
    assert parse_as_of("2015-6-1") == 20150601
    assert parse_as_of(None) is None and parse_as_of("  ") is None


def seen(filters, meta):
    return document_matches_filter(filters, Document(content="x", meta=meta))


def test_by_default_only_the_law_in_force_is_seen_and_unversioned_documents_always():
    today = version_filter()
    assert seen(today, NOW) and not seen(today, OLD) and not seen(today, REPEALED)
    assert seen(today, {"source": "file:notes.md"})  # a plain file or an older store has no version fields


def test_as_of_sees_the_version_in_force_that_day():
    assert seen(version_filter("2020-01-01"), OLD) and not seen(version_filter("2020-01-01"), NOW)
    assert seen(version_filter("2027-01-01"), NOW) and not seen(version_filter("2027-01-01"), OLD)
    assert not seen(version_filter("2019-04-22"), OLD)  # before that version took effect
    assert seen(version_filter("2000-01-01"), {"source": "file:notes.md"})


def test_explicit_version_filters_are_not_narrowed_by_the_default():
    as_of = with_versions({"field": "meta.law", "operator": "==", "value": TRADEMARK}, "2020-01-01")
    assert selects_versions(as_of)
    assert with_versions(as_of) is as_of  # a retriever given the application's as_of filters adds nothing
    assert seen(with_versions(as_of), {**OLD, "law": TRADEMARK})
    plain = with_versions({"field": "meta.law", "operator": "==", "value": TRADEMARK})
    assert not seen(plain, {**OLD, "law": TRADEMARK}) and seen(plain, {**NOW, "law": TRADEMARK})


def test_a_version_not_in_force_is_marked_with_its_date():
    assert version_mark(NOW) == ""
    assert version_mark(OLD) == "〔已修改，2027-01-01起不再适用〕"
    assert version_mark(REPEALED) == "〔已失效〕"
    assert version_mark(NOW, "2020-01-01") == "〔2027-01-01起施行，2020-01-01时尚未生效〕"
    assert version_mark(OLD, "2020-01-01") == ""


def test_an_amending_article_key_reads_as_a_citation():
    assert key_label("中华人民共和国刑法修正案（八）条目二十二") == "《中华人民共和国刑法修正案（八）》条目二十二"
    assert key_label(f"{CRIMINAL}第一百三十三条之一") == f"《{CRIMINAL}》第一百三十三条之一"


def test_older_keys_carry_their_version_date_and_keep_their_law():
    key = article_key(TRADEMARK, "第十条", "2019-04-23")
    assert key == f"{TRADEMARK}第十条@2019-04-23" and key_law(key) == TRADEMARK
    assert article_key(TRADEMARK, "第十条") == f"{TRADEMARK}第十条"


@pytest.mark.parametrize(("text", "targets", "whole"), [
    ('在刑法第一百三十三条后增加一条，作为第一百三十三条之一："在道路上……"', ("第一百三十三条之一",), True),
    ('将刑法第二百六十四条修改为："盗窃公私财物……"', ("第二百六十四条",), True),
    ('在刑法第一百六十五条中增加一款作为第二款，将该条修改为："国有公司……"', ("第一百六十五条",), True),
    ('将刑法第三百八十七条第一款修改为："国家机关……"', ("第三百八十七条",), False),
])
def test_an_amending_instruction_names_the_articles_it_changes(text, targets, whole):
    change = parse_instruction(text, "刑法")
    assert change is not None and change.targets == targets and change.whole is whole
    assert change.new_text.endswith("……")


def test_a_reference_to_the_law_is_not_an_amendment():
    assert parse_instruction("依照刑法第二百三十四条的规定追究刑事责任。", "刑法") is None


@pytest.fixture(scope="module")
def db():
    return StatuteDB()


def test_the_criminal_law_is_in_force_with_its_amendments_linked(db):
    assert db.law_counts()[CRIMINAL] == 505
    assert db.resolve(["刑法"]) == [CRIMINAL]
    articles = {d.meta["article_no"]: d for d in db.articles(CRIMINAL)}
    theft = articles["第二百六十四条"]
    assert theft.meta["in_force"] is True and "中华人民共和国刑法修正案（八）条目三十九" in theft.meta["amended_by"]
    assert "第一百三十三条之一" in articles  # the article 修正案（八） added
    drunk_driving = next(d for d in db.articles("中华人民共和国刑法修正案（八）")
                         if d.meta["article_no"] == "条目二十二")
    assert drunk_driving.meta["amends"] == [f"{CRIMINAL}第一百三十三条之一"]


def test_an_article_a_later_amendment_rewrote_shows_the_text_in_force(db):
    article = next(d for d in db.articles(CRIMINAL) if d.meta["article_no"] == "第一百六十五条")
    amendment = next(d for d in db.articles("中华人民共和国刑法修正案（十二）") if d.meta["article_no"] == "条目一")
    new_text = parse_instruction(amendment.content, "刑法").new_text
    assert article.content.startswith(new_text)
    assert "本条经《中华人民共和国刑法修正案（十二）》条目一修改，2024-03-01起施行" in article.content
    assert article.meta["valid_from"] == 20240301 and article.meta["amended_on"] == 20240301
    criminal = next(v for v in db.versions() if v.law_name == CRIMINAL)
    superseded = {d.meta["article_no"]: d for d in db.superseded_articles(criminal)}
    before = superseded["第一百六十五条"]
    assert before.meta["in_force"] is False and before.meta["valid_to"] == 20240301
    assert before.content != article.content and "修正案（十二）" not in before.content


def test_older_versions_end_when_the_next_one_begins(db):
    old, = db.older_versions(["商标法"])
    current = next(v for v in db.versions() if v.law_name == TRADEMARK and v.in_force)
    assert old.status == "历史版本" and old.valid_to == current.valid_from
    assert old.source == f"law:{TRADEMARK}@{old.version_date}"
    assert len(db.older_versions(["all"])) == 25
