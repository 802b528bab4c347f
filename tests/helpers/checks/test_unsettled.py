"""helpers.checks.unsettled: the one line on what part of a question the evidence does not settle."""

from helpers.checks.unsettled import NOTHING_FOUND, question_point, uncovered_words, unsettled_note

STORY = "我的朋友在公案机关办理了取保候审，又在检察院办理了取保候审，现在有两个月了还没起诉请问是不是过了起诉期"


def test_the_point_is_the_last_clause_that_asks():
    assert question_point(STORY) == "现在有两个月了还没起诉请问是不是过了起诉期"
    assert question_point("公司收集我的个人信息需要我同意吗") == "公司收集我的个人信息需要我同意吗"
    assert question_point("借了钱不还。我该怎么办？后来他搬走了") == "我该怎么办"


def test_a_statement_without_a_question_word_gives_its_last_clause_and_a_long_one_is_cut():
    assert question_point("房东不退押金，已经三个月") == "已经三个月"
    long = "请问" + "甲" * 60 + "吗"
    assert len(question_point(long)) == 40 and question_point(long).endswith("…")
    assert question_point("，。？") == ""


def test_uncovered_words_keep_question_order_and_appear_once():
    texts = ["取保候审最长不得超过十二个月。"]
    assert uncovered_words(["起诉", "取保候审", "检察院", "起诉"], texts) == ["起诉", "检察院"]


def test_the_note_names_the_point_and_its_missing_words_first():
    words = ["朋友", "公案", "机关", "取保", "取保候审", "检察院", "两个", "起诉", "起诉期"]
    note = unsettled_note(STORY, words, ["人民法院、人民检察院和公安机关根据案件情况，对犯罪嫌疑人可以取保候审。"])
    assert note.startswith("问题中“现在有两个月了还没起诉请问是不是过了起诉期”没有得到检索到的法条的直接回答")
    # words of the asking clause come first; 起诉 inside 起诉期 adds nothing; at most four words
    assert note.endswith("（法条未涉及：两个、起诉期、朋友、公案）")


def test_evidence_holding_every_word_and_no_evidence_at_all():
    assert unsettled_note("收集个人信息要同意吗", ["收集", "个人信息", "同意"],
                          ["收集个人信息应当取得个人同意。"]).endswith("（检索到的法条相关性不足）")
    assert unsettled_note("收集个人信息要同意吗", ["收集"], []) == NOTHING_FOUND
