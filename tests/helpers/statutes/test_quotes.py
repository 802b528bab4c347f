"""Statute quotes (`helpers.statutes.quotes`) on real article text: `normalise` (NFKC, no whitespace or
punctuation), `is_excerpt` (whole text or pieces in order, ``……``/``...``/``⋯`` gaps, wrong wording refused) and
`excerpt` (a short article as it is; a long one as its lead, its lead-in's items while they fit and the parts the
hint shares character pairs with, in order, ``……`` where text is left out, within the limit). How the answer check
uses them is in tests/helpers/checks/test_answer_check.py."""

import pytest

from helpers.statutes.quotes import ELLIPSIS_RE, EXCERPT_CHARS, excerpt, is_excerpt, normalise

# 《中华人民共和国劳动合同法》第十九条 (195 characters)
LABOUR_19 = (
    "劳动合同期限三个月以上不满一年的，试用期不得超过一个月；劳动合同期限一年以上不满三年的，试用期不得超过二个月；"
    "三年以上固定期限和无固定期限的劳动合同，试用期不得超过六个月。\n"
    "同一用人单位与同一劳动者只能约定一次试用期。\n"
    "以完成一定工作任务为期限的劳动合同或者劳动合同期限不满三个月的，不得约定试用期。\n"
    "试用期包含在劳动合同期限内。劳动合同仅约定试用期的，试用期不成立，该期限为劳动合同期限。"
)
# 《中华人民共和国个人信息保护法》第十三条 (317 characters: longer than EXCERPT_CHARS)
PIPL_13 = (
    "符合下列情形之一的，个人信息处理者方可处理个人信息：\n"
    "（一）取得个人的同意；\n"
    "（二）为订立、履行个人作为一方当事人的合同所必需，或者按照依法制定的劳动规章制度和依法签订的集体合同实施人力资源管理所必需；\n"
    "（三）为履行法定职责或者法定义务所必需；\n"
    "（四）为应对突发公共卫生事件，或者紧急情况下为保护自然人的生命健康和财产安全所必需；\n"
    "（五）为公共利益实施新闻报道、舆论监督等行为，在合理的范围内处理个人信息；\n"
    "（六）依照本法规定在合理的范围内处理个人自行公开或者其他已经合法公开的个人信息；\n"
    "（七）法律、行政法规规定的其他情形。\n"
    "依照本法其他有关规定，处理个人信息应当取得个人同意，但是有前款第二项至第七项规定情形的，不需取得个人同意。"
)
LEAD = "符合下列情形之一的，个人信息处理者方可处理个人信息："
LAST = "依照本法其他有关规定，处理个人信息应当取得个人同意，但是有前款第二项至第七项规定情形的，不需取得个人同意。"


def shown_characters(text: str) -> int:
    """The article characters an excerpt shows (without its ``……`` marks and line breaks)."""
    return sum(len(piece.replace("\n", "")) for piece in ELLIPSIS_RE.split(text))


# --- normalise ---------------------------------------------------------------------------------------------------


def test_normalise_drops_whitespace_and_chinese_and_ascii_punctuation():
    assert normalise("（一）取得个人的同意；\n") == "一取得个人的同意"
    assert normalise("(一) 取得个人的同意;") == "一取得个人的同意"
    assert normalise("《中华人民共和国个人信息保护法》第十四条：") == "中华人民共和国个人信息保护法第十四条"


def test_normalise_folds_full_width_forms_and_drops_symbols():
    assert normalise("ＡＢＣ１２３") == "ABC123"
    assert normalise("罚款￥5,000元＋") == "罚款5000元"  # ￥ and ＋ are symbols, the comma punctuation
    assert normalise("\u3000试用期\u3000") == "试用期"  # the ideographic space


# --- is_excerpt --------------------------------------------------------------------------------------------------


def test_the_whole_article_and_a_sentence_of_it_are_its_text():
    assert is_excerpt(LABOUR_19, LABOUR_19)
    assert is_excerpt("试用期不得超过二个月", LABOUR_19)
    assert is_excerpt("同一用人单位与同一劳动者只能约定一次试用期。", LABOUR_19)


def test_other_punctuation_and_a_dropped_line_break_still_quote_correctly():
    assert is_excerpt("劳动合同期限三个月以上不满一年的,试用期不得超过一个月,劳动合同期限一年以上", LABOUR_19)
    assert is_excerpt("试用期不得超过六个月同一用人单位与同一劳动者只能约定一次试用期", LABOUR_19)
    assert is_excerpt("(一)取得个人的同意", PIPL_13)


@pytest.mark.parametrize("gap", ["……", "…", "...", "......", "⋯⋯"])
def test_an_ellipsis_of_any_style_marks_left_out_text(gap):
    assert is_excerpt(f"个人信息处理者{gap}方可处理个人信息", PIPL_13)
    assert is_excerpt(f"符合下列情形之一的{gap}（七）法律、行政法规规定的其他情形。", PIPL_13)


def test_the_pieces_must_occur_in_the_articles_order():
    assert not is_excerpt("方可处理个人信息……个人信息处理者", PIPL_13)
    assert not is_excerpt("（七）法律、行政法规规定的其他情形……（一）取得个人的同意", PIPL_13)


def test_a_repeated_piece_needs_a_second_occurrence():
    assert PIPL_13.count("个人信息处理者") == 1
    assert not is_excerpt("个人信息处理者……个人信息处理者", PIPL_13)
    assert is_excerpt("试用期……试用期……试用期", LABOUR_19)  # it occurs many times


@pytest.mark.parametrize("wrong", [
    "试用期不得超过三个月",  # a changed number
    "试用期最长不得超过六个月",  # an added word
    "同一用人单位与同一劳动者只能约定两次试用期",
    LABOUR_19 + "违反本法规定的，由劳动行政部门责令改正。",  # the article and more
])
def test_wrong_wording_is_not_the_articles_text(wrong):
    assert not is_excerpt(wrong, LABOUR_19)


@pytest.mark.parametrize("empty", ["", "   ", "……", "...", "，。；", "……，……"])
def test_a_quote_with_no_text_is_no_excerpt(empty):
    assert not is_excerpt(empty, LABOUR_19)


# --- excerpt -----------------------------------------------------------------------------------------------------


def test_a_short_article_is_shown_whole_whatever_the_hint():
    assert len(LABOUR_19) <= EXCERPT_CHARS
    assert excerpt(LABOUR_19) == (LABOUR_19, False)
    assert excerpt(LABOUR_19, hint="试用期 一年") == (LABOUR_19, False)
    assert excerpt(PIPL_13, limit=len(PIPL_13)) == (PIPL_13, False)  # exactly at the limit


def test_without_a_hint_a_long_article_shows_its_lead_and_the_items_that_fit():
    text, partial = excerpt(PIPL_13)
    assert partial
    assert text.startswith(LEAD + "\n（一）取得个人的同意；\n（二）")
    assert "（六）依照本法规定" in text and "（七）" not in text and LAST not in text  # the first item over stops it
    assert text.endswith("已经合法公开的个人信息；……")
    assert shown_characters(text) <= EXCERPT_CHARS
    assert is_excerpt(text, PIPL_13)


def test_the_paragraph_the_hint_needs_is_kept_in_order_with_the_gap_marked():
    text, partial = excerpt(PIPL_13, hint="不需取得个人同意", limit=120)
    assert partial
    assert text == f"{LEAD}\n（一）取得个人的同意；……{LAST}"  # the last paragraph kept: no trailing ……
    assert is_excerpt(text, PIPL_13)


def test_a_paragraph_that_does_not_fit_the_limit_is_left_out():
    wanted = "同一用人单位与同一劳动者只能约定一次试用期。"
    lead = LABOUR_19.split("\n")[0]
    text, partial = excerpt(LABOUR_19, hint="只能约定一次试用期", limit=len(lead) + len(wanted))
    assert partial and text == f"{lead}\n{wanted}……"  # consecutive paragraphs keep their line break
    text, partial = excerpt(LABOUR_19, hint="只能约定一次试用期", limit=len(lead) + len(wanted) - 1)
    assert partial and text == f"{lead}……"


def test_a_long_paragraph_is_cut_into_sentences():
    flat = PIPL_13.replace("\n", "")  # one paragraph of 309 characters, as some sources give it
    text, partial = excerpt(flat, hint="紧急情况 生命健康")
    assert partial
    assert text == (f"{LEAD}（一）取得个人的同意；……"
                    "（四）为应对突发公共卫生事件，或者紧急情况下为保护自然人的生命健康和财产安全所必需；……")
    text, _ = excerpt(flat, hint="定职责 卫生事件")
    assert "（三）为履行法定职责或者法定义务所必需；（四）为应对" in text  # consecutive sentences: no mark between
    assert text.count("……") == 2 and is_excerpt(text, flat)


def test_every_excerpt_is_the_articles_own_text_within_the_limit():
    for hint in ("", "紧急情况", "公共利益 新闻报道", "个人同意", "劳动规章制度", "无关的问题：商标注册"):
        for limit in (80, 160, EXCERPT_CHARS):
            text, partial = excerpt(PIPL_13, hint=hint, limit=limit)
            assert partial and is_excerpt(text, PIPL_13), (hint, limit)
            assert text.startswith(LEAD), (hint, limit)
            assert shown_characters(text) <= limit, (hint, limit)
