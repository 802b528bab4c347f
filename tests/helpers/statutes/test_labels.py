"""How statutes are named (`helpers.statutes.labels`): `article_no` normalising Arabic and Chinese numbers to the
corpus form (and refusing what is no number), `citation_label` from a document's meta, and `key_law`/`key_label`
agreeing with the keys `article_key` builds. The amendment-item label, the versioned key and the plain
``key_law`` splits are in tests/helpers/statutes/test_versions.py and tests/provisioning/test_quick_start.py."""

import pytest
from haystack import Document

from helpers.statutes.labels import LAW_NAME_PREFIX, article_key, article_no, citation_label, key_label, key_law

PIPL = "中华人民共和国个人信息保护法"
CIVIL = "中华人民共和国民法典"
CRIMINAL = "中华人民共和国刑法"


@pytest.mark.parametrize(("number", "expected"), [
    ("13", "第十三条"),
    ("十三", "第十三条"),
    ("一十三", "第十三条"),  # the statute spelling drops the leading 一 of 一十
    (" 14 ", "第十四条"),
    ("１４", "第十四条"),  # full-width digits, as a pasted question may carry them
    ("1032", "第一千零三十二条"),
    ("一千零三十二", "第一千零三十二条"),
    ("两百", "第二百条"),
    ("110", "第一百一十条"),
    ("1260", "第一千二百六十条"),
])
def test_article_no_writes_any_number_in_the_corpus_form(number, expected):
    assert article_no(number) == expected


def test_article_no_keeps_the_zhi_suffix():
    assert article_no("十三", "一") == "第十三条之一"
    assert article_no("133", "一") == "第一百三十三条之一"
    assert article_no("133", None) == article_no("133", "") == "第一百三十三条"


@pytest.mark.parametrize("bad", ["第十三条", "十三条", "", "  ", "-1", "1.5", "十三a", "thirteen"])
def test_article_no_refuses_text_that_is_no_number(bad):
    with pytest.raises(ValueError, match="not a Chinese numeral"):
        article_no(bad)


@pytest.mark.parametrize("out_of_range", ["0", "零", "100000", "十万"])
def test_article_no_refuses_numbers_no_article_has(out_of_range):
    with pytest.raises(ValueError, match=r"1\.\.99999"):
        article_no(out_of_range)


def test_citation_label_reads_law_and_article_from_meta():
    doc = Document(content="为履行法定职责或者法定义务所必需", meta={"law": PIPL, "article_no": "第十三条"})
    assert citation_label(doc) == f"《{PIPL}》第十三条"


def test_citation_label_of_a_document_without_statute_meta_is_an_empty_title():
    doc = Document(content="第一条 员工请假需提前三天申请。", meta={"source": "file:员工手册.md"})
    assert citation_label(doc) == "《》"


@pytest.mark.parametrize(("law", "number"), [(PIPL, "14"), (CIVIL, "1032"), (CRIMINAL, "133")])
def test_a_key_built_from_a_number_splits_back_into_its_law_and_label(law, number):
    doc = Document(content="x", meta={"law": law, "article_no": article_no(number)})
    key = article_key(law, article_no(number))
    assert key_law(key) == law
    assert key_label(key) == citation_label(doc)
    assert key_law(article_key(law, article_no(number), "2019-04-23")) == law


def test_key_law_of_a_zhi_article_in_an_older_version():
    assert key_law(article_key(CRIMINAL, article_no("133", "一"), "1997-10-01")) == CRIMINAL


def test_keys_without_the_national_prefix_split_the_same_way():
    short = CIVIL.removeprefix(LAW_NAME_PREFIX)
    assert short == "民法典"
    assert key_law(f"{short}第一千零三十二条") == short
    assert key_label(f"{short}第一千零三十二条") == "《民法典》第一千零三十二条"


@pytest.mark.parametrize("key", [
    "第十三条",  # an article number with no law before it
    "员工手册",  # a plain file's key
    f"{CIVIL}第五百条第二款",  # a paragraph, not an article key
    f"{CIVIL}第13条",  # Arabic digits are not the corpus form
])
def test_a_key_that_is_not_law_plus_article_is_its_own_law_and_label(key):
    assert key_law(key) == key
    assert key_label(key) == key
