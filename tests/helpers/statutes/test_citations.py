from haystack import Document

from helpers.statutes.citations import UNVERIFIED_MARK, verify_citations

LAW = "中华人民共和国个人信息保护法"
EVIDENCE = [
    Document(content="基于个人同意处理个人信息的……", meta={"law": LAW, "article_no": "第十四条", "key": f"{LAW}第十四条"}),
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
