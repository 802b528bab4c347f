"""What a pair reader sees of an article: the label and the first sentences within the window."""

from haystack import Document

from helpers.statutes.passages import first_sentences, passage


def test_a_short_text_is_kept_whole_with_its_whitespace_folded():
    assert first_sentences("处理个人信息\n应当  取得同意。", 80) == "处理个人信息 应当 取得同意。"


def test_a_long_text_ends_at_the_last_sentence_end_in_the_window():
    text = "第一句规定义务。第二句规定例外；第三句很长很长很长很长很长很长很长。"
    assert first_sentences(text, 20) == "第一句规定义务。第二句规定例外；"


def test_a_sentence_end_early_in_the_window_is_not_used_and_the_cut_is_marked():
    text = "短句。" + "没有句号的长长的一段说明" * 5
    cut = first_sentences(text, 30)
    assert cut == text[:30] + "……"


def test_passage_leads_with_the_citation_label_or_a_title():
    article = Document(content="个人信息处理者方可处理个人信息。", meta={"law": "示例法", "article_no": "第十三条"})
    assert passage(article, 80) == "《示例法》第十三条 个人信息处理者方可处理个人信息。"
    web = Document(content="网页摘要。", meta={"title": "标题"})
    assert passage(web, 80) == "标题 网页摘要。"
    assert passage(Document(content="只有正文。"), 80) == "只有正文。"
