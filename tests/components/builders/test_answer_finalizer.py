"""AnswerFinalizer: the article lists it appends are checked like the model's own citations."""

from haystack import Document

from components.builders.answer_finalizer import AnswerFinalizer
from components.builders.evidence_selector import EvidenceSelector
from helpers.records.rounds import Round

PIPL = "中华人民共和国个人信息保护法"


def article(law: str, number: str, text: str) -> Document:
    return Document(content=text, meta={"key": f"{law}{number}", "law": law, "article_no": number})


def test_a_citation_quoted_from_the_evidence_into_the_list_is_checked_too():
    evidence = [article("隐私政策", "第一条", "收集个人信息需要同意，依据是《中华人民共和国刑法》第一条。"),
                article(PIPL, "第十四条", "基于个人同意处理个人信息的，该同意应当由个人……"
                                        "参照本法《中华人民共和国个人信息保护法》第十四条。")]
    result = AnswerFinalizer().run(query="收集个人信息要同意吗", evidence=evidence,
                                   situation="unjudged", text="需要取得同意。")["result"]
    assert "参考法条" in result.answer
    assert "《中华人民共和国刑法》第一条〔未核实〕" in result.answer  # points at nothing in the evidence
    assert f"《{PIPL}》第十四条〔未核实〕" not in result.answer  # points at an article that was given
    assert {c["key"] for c in result.citations} == {"隐私政策第一条", f"{PIPL}第十四条"}
    assert result.unverified_citations == []  # the model itself cited nothing unverifiable


def test_a_law_the_quoted_statute_merely_names_is_not_flagged_but_the_model_naming_it_is():
    evidence = [article(PIPL, "第五十条", "个人信息处理者拒绝个人行使权利的请求的，"
                                        "个人可以依照《中华人民共和国民事诉讼法》向人民法院提起诉讼。")]
    result = AnswerFinalizer().run(query="被拒绝查询个人信息怎么办", evidence=evidence,
                                   situation="unjudged", text="可以按《中华人民共和国民事诉讼法》起诉。")["result"]
    listed = result.answer.split("参考法条：")[1]
    assert "《中华人民共和国民事诉讼法》向人民法院" in listed and "〔未核实〕" not in listed  # the statute's own words
    assert result.unverified_citations == ["《中华人民共和国民事诉讼法》"]  # the model's claim has no evidence


def failed_round(missing: str) -> Round:
    doc = article(PIPL, "第十四条", "基于个人同意处理个人信息的，该同意应当由个人在充分知情的前提下自愿、明确作出。")
    return Round(number=1, queries=["q"], documents=[doc],
                 evaluation={"passed": False, "total": 10.0, "relevance": 5.0, "missing": missing})


def test_evidence_that_failed_the_judge_is_said_first_in_one_line():
    missing = "问题中“离职后还能删除吗”没有得到检索到的法条的直接回答\n（法条未涉及：离职）"
    selected = EvidenceSelector().run(query="离职后还能删除吗", rounds=[failed_round(missing)])
    assert selected["situation"] == "partial"
    result = AnswerFinalizer().run(query="离职后还能删除吗", evidence=selected["evidence"], situation="partial",
                                   rounds=[failed_round(missing)], text="可以请求删除。",
                                   preface=selected["preface"])["result"]
    first_line = result.answer.splitlines()[0]
    assert first_line == "知识库未能确定：问题中“离职后还能删除吗”没有得到检索到的法条的直接回答 （法条未涉及：离职）"
    assert "可以请求删除。" in result.answer


def test_a_long_note_is_cut_and_passing_evidence_gets_no_such_line():
    long = EvidenceSelector().run(query="q", rounds=[failed_round("缺" * 300)])["preface"]
    assert len(long.splitlines()[0]) == len("知识库未能确定：") + 120
    passed = Round(number=1, queries=["q"], documents=failed_round("").documents,
                   evaluation={"passed": True, "total": 36.0, "missing": ""})
    selected = EvidenceSelector().run(query="q", rounds=[passed])
    assert selected["situation"] == "sufficient" and selected["preface"] == ""
