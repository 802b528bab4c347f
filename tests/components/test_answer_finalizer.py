"""AnswerFinalizer: the article lists it appends are checked like the model's own citations."""

from haystack import Document

from components.answer_finalizer import AnswerFinalizer
from components.loop_state import LoopState

PIPL = "中华人民共和国个人信息保护法"


def article(law: str, number: str, text: str) -> Document:
    return Document(content=text, meta={"key": f"{law}{number}", "law": law, "article_no": number})


def test_a_citation_quoted_from_the_evidence_into_the_list_is_checked_too():
    evidence = [article("隐私政策", "第一条", "收集个人信息需要同意，依据是《中华人民共和国刑法》第一条。"),
                article(PIPL, "第十四条", "基于个人同意处理个人信息的，该同意应当由个人……参照本法《中华人民共和国个人信息保护法》第十四条。")]
    result = AnswerFinalizer().run(state=LoopState(query="收集个人信息要同意吗"), evidence=evidence,
                                   situation="unjudged", text="需要取得同意。")["result"]
    assert "参考法条" in result["answer"]
    assert "《中华人民共和国刑法》第一条〔未核实〕" in result["answer"]  # points at nothing in the evidence
    assert f"《{PIPL}》第十四条〔未核实〕" not in result["answer"]  # points at an article that was given
    assert {c["key"] for c in result["citations"]} == {"隐私政策第一条", f"{PIPL}第十四条"}
    assert result["unverified_citations"] == []  # the model itself cited nothing unverifiable
