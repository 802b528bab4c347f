from haystack import Document

from helpers.statutes.citations import UNVERIFIED_MARK, verify_citations

LAW = "中华人民共和国个人信息保护法"
EVIDENCE = [
    Document(content="基于个人同意处理个人信息的……",
             meta={"law": LAW, "article_no": "第十四条", "key": f"{LAW}第十四条"}),
    Document(content="有下列情形之一的……", meta={"law": LAW, "article_no": "第十三条", "key": f"{LAW}第十三条"}),
    Document(content="网页摘要", meta={"source": "web", "evidence_label": "网页1", "url": "https://e.cn"}),
]


def test_citations_in_the_evidence_are_kept_and_collected():
    check = verify_citations(f"依据《{LAW}》第十四条和《个人信息保护法》第13条，另见[网页1]。", EVIDENCE)
    assert check.unverified == [] and UNVERIFIED_MARK not in check.text
    assert [d.meta.get("key") or d.meta["url"] for d in check.verified] == [f"{LAW}第十四条", f"{LAW}第十三条",
                                                                          "https://e.cn"]
    assert check.mentions == {EVIDENCE[0].id: [f"《{LAW}》第十四条"], EVIDENCE[1].id: ["《个人信息保护法》第13条"],
                              EVIDENCE[2].id: ["[网页1]"]}  # what a UI turns into links


def test_citations_outside_the_evidence_are_flagged():
    check = verify_citations("《个人信息保护法》第九十九条、《民法典》第一千零三十二条、[网页2]", EVIDENCE)
    assert check.unverified == ["《个人信息保护法》第九十九条", "《民法典》第一千零三十二条", "[网页2]"]
    assert check.text.count(UNVERIFIED_MARK) == 3 and check.verified == []


def test_a_law_named_without_an_article():
    assert verify_citations("根据《个人信息保护法》的规定", EVIDENCE).unverified == []
    assert verify_citations("根据《劳动法》的规定", EVIDENCE).unverified == ["《劳动法》"]


OTHER_LAW = "中华人民共和国民法典"
TWO_LAWS = [*EVIDENCE, Document(content="民事主体从事民事活动，应当遵循自愿原则。",
                                meta={"law": OTHER_LAW, "article_no": "第五条", "key": f"{OTHER_LAW}第五条"})]


def test_a_bare_article_outside_the_evidence_is_flagged():
    """Issue 63, item 5: “第十九条…规定了处理敏感个人信息应当取得个人的单独同意” passed unmarked."""
    text = "第十九条规定了处理敏感个人信息应当取得个人的单独同意。"
    for evidence in (EVIDENCE, TWO_LAWS):  # the only law of the evidence; or no evidence article of that number
        check = verify_citations(text, evidence)
        assert check.unverified == ["第十九条"] and check.text.startswith("第十九条" + UNVERIFIED_MARK)


def test_a_bare_article_is_read_as_the_law_named_before_it():
    check = verify_citations(f"依据《{LAW}》第十三条，另见第十四条；第五条不适用。", TWO_LAWS)
    assert [d.meta["key"] for d in check.verified] == [f"{LAW}第十三条", f"{LAW}第十四条"]
    assert check.unverified == ["第五条"]  # 民法典's 第五条 is in the evidence, the personal-information law's is not
    assert check.mentions[EVIDENCE[0].id] == ["第十四条"]
    earlier = verify_citations("第五条规定了自愿原则。", TWO_LAWS, context=f"《{OTHER_LAW}》是基本法律。")
    assert earlier.unverified == [] and [d.meta["key"] for d in earlier.verified] == [f"{OTHER_LAW}第五条"]


def test_a_bare_article_that_cannot_be_told_apart_or_is_not_an_article_is_left_alone():
    assert verify_citations("第五条规定了自愿原则。", [*TWO_LAWS, Document(
        content="……", meta={"law": LAW, "article_no": "第五条", "key": f"{LAW}第五条"})]).unverified == []
    assert verify_citations("第一条建议：先协商。民法典第九十九条另有规定。", EVIDENCE).unverified == []
    statute = verify_citations("依照第十九条的规定处理。", EVIDENCE, model_wrote=False)  # the store's own wording
    assert statute.unverified == [] and UNVERIFIED_MARK not in statute.text
