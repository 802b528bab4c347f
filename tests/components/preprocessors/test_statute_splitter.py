import pytest
from haystack import Document

from components.preprocessors.statute_splitter import StatuteSplitter, document_id

STATUTE = """示例保护法

第一章 总则

第一条 为了保护示例权益，制定本法。
第二条　本法所称示例，是指以电子方式记录的各种信息。
本条第二款的内容。
第二条之一 新增的条文。
第二章 处理规则
第一节 一般规定
第三条处理示例应当取得个人同意。
依照前款规定……第十三条规定的情形除外。
第二节 特别规定
第十三条 有下列情形之一的，可以处理：
（一）为订立合同所必需；
第一百零一条 本法自公布之日起施行。
"""


def split(text: str, **meta) -> list[Document]:
    doc = Document(content=text, meta={"law": "示例保护法", "source": "file:示例.txt", **meta})
    return StatuteSplitter().run(documents=[doc])["documents"]


def test_articles_split_on_article_markers_including_zhiyi():
    docs = split(STATUTE)
    assert [d.meta["article_no"] for d in docs] == ["第一条", "第二条", "第二条之一", "第三条", "第十三条",
                                                   "第一百零一条"]
    assert docs[1].content == "本法所称示例，是指以电子方式记录的各种信息。\n本条第二款的内容。"
    assert docs[2].content == "新增的条文。"
    assert docs[5].content == "本法自公布之日起施行。"


def test_cross_reference_at_line_start_is_not_a_new_article():
    docs = split("第五条 前款。\n第三条规定的情形除外。\n第六条 后款。")
    assert [d.meta["article_no"] for d in docs] == ["第五条", "第六条"]
    assert docs[0].content == "前款。\n第三条规定的情形除外。"


def test_chapters_and_sections_are_tracked_and_reset():
    docs = {d.meta["article_no"]: d for d in split(STATUTE)}
    assert docs["第一条"].meta["chapter"] == "第一章 总则"
    assert docs["第一条"].meta["section"] is None
    assert docs["第三条"].meta["chapter"] == "第二章 处理规则"
    assert docs["第三条"].meta["section"] == "第一节 一般规定"
    assert docs["第十三条"].meta["section"] == "第二节 特别规定"


def test_meta_key_and_stable_ids():
    first, second = split(STATUTE), split(STATUTE)
    assert first[0].meta["key"] == "示例保护法第一条"
    assert first[0].meta["source"] == "file:示例.txt"
    assert first[0].meta["status"] == "现行有效"
    assert [d.id for d in first] == [d.id for d in second]
    assert first[0].id == document_id("file:示例.txt", "示例保护法第一条")
    assert len({d.id for d in first}) == len(first)


def test_arabic_article_numbers():
    docs = split("第1条 甲。\n第2条 乙。")
    assert [d.meta["key"] for d in docs] == ["示例保护法第1条", "示例保护法第2条"]


def test_plain_text_is_split_by_paragraph_with_a_size_cap():
    paragraph = "这是一句话。" * 30  # 180 chars
    text = "\n\n".join([paragraph] * 5) + "\n\n" + "长" * 1000
    docs = StatuteSplitter(max_paragraph_chars=400).run(
        documents=[Document(content=text, meta={"law": "说明", "source": "file:说明.txt"})]
    )["documents"]
    assert all(len(d.content) <= 400 for d in docs)
    assert "".join(d.content.replace("\n", "") for d in docs) == text.replace("\n", "")
    assert [d.meta["article_no"] for d in docs][:2] == ["第1段", "第2段"]
    assert docs[0].content.endswith("。")


def test_presplit_articles_pass_through_with_key():
    doc = Document(content="条文内容。", meta={"law": "甲法", "article_no": "第九条", "source": "law:甲法"})
    (out,) = StatuteSplitter().run(documents=[doc])["documents"]
    assert out.meta["key"] == "甲法第九条"
    assert out.content == "条文内容。"


def test_title_falls_back_to_first_line():
    docs = StatuteSplitter().run(documents=[Document(content="某某条例\n第一条 内容。", meta={"source": "x"})])
    assert docs["documents"][0].meta["key"] == "某某条例第一条"


def test_rejects_tiny_cap():
    with pytest.raises(ValueError, match="max_paragraph_chars"):
        StatuteSplitter(max_paragraph_chars=10)
