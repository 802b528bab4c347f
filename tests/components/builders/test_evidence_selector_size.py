"""How many local articles the answer reads (issue 62, item 2): the judge's verdict decides between the two sizes."""

import pytest
from haystack import Document
from haystack.core.serialization import component_from_dict, component_to_dict

from components.builders.evidence_selector import EvidenceSelector
from helpers.records.rounds import Round

ARTICLES = [Document(content=f"第{i}条的内容。",
                     meta={"key": f"测试法第{i}条", "law": "测试法", "article_no": f"第{i}条"})
            for i in range(1, 11)]


def judged(passed: bool, relevance: float = 6.0) -> list[Round]:
    return [Round(number=1, queries=["问"], documents=ARTICLES,
                  evaluation={"total": 35.0 if passed else 20.0, "passed": passed, "relevance": relevance,
                              "missing": "" if passed else "缺少罚则"})]


def keys(out: dict) -> list[str]:
    return [d.meta["key"] for d in out["evidence"]]


def test_passed_evidence_is_read_to_max_local() -> None:
    out = EvidenceSelector(max_local=5, max_local_unsure=8).run(query="问", rounds=judged(passed=True))
    assert out["situation"] == "sufficient"
    assert keys(out) == [f"测试法第{i}条" for i in range(1, 6)]


def test_evidence_the_judge_did_not_pass_is_read_deeper() -> None:
    out = EvidenceSelector(max_local=5, max_local_unsure=8).run(query="问", rounds=judged(passed=False))
    assert out["situation"] == "partial"
    assert keys(out) == [f"测试法第{i}条" for i in range(1, 9)]
    assert [d.meta["evidence_label"] for d in out["evidence"]] == [str(i) for i in range(1, 9)]


def test_unjudged_rag_reads_max_local() -> None:
    out = EvidenceSelector(max_local=5, max_local_unsure=8).run(query="问", documents=ARTICLES)
    assert out["situation"] == "unjudged"
    assert len(out["evidence"]) == 5


def test_without_an_unsure_size_both_verdicts_read_max_local() -> None:
    selector = EvidenceSelector(max_local=4)
    assert len(selector.run(query="问", rounds=judged(passed=False))["evidence"]) == 4
    assert selector.max_local_unsure == 4


def test_a_pool_smaller_than_the_size_is_read_whole() -> None:
    rounds = [Round(number=1, queries=["问"], documents=ARTICLES[:3], evaluation={"passed": False, "relevance": 5.0})]
    assert len(EvidenceSelector(max_local=5, max_local_unsure=8).run(query="问", rounds=rounds)["evidence"]) == 3


@pytest.mark.parametrize("name", ["max_local", "max_web", "max_local_unsure"])
def test_a_negative_size_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must be >= 0, got -1"):
        EvidenceSelector(**{name: -1})


def test_round_trip_keeps_both_sizes() -> None:
    selector = EvidenceSelector(max_local=3, max_local_unsure=7, max_web=2)
    data = component_to_dict(selector, "selector")
    assert data["init_parameters"] == {"max_local": 3, "max_web": 2, "max_local_unsure": 7}
    copy = component_from_dict(EvidenceSelector, data, "selector")
    assert (copy.max_local, copy.max_local_unsure, copy.max_web) == (3, 7, 2)


def test_the_settings_size_reaches_the_pipeline(settings) -> None:
    from pipelines.agentic import build_agentic_pipeline
    from pipelines.stores import open_document_store

    settings = settings.__class__(**{**settings.__dict__, "evidence_top_n": 4, "evidence_top_n_unsure": 6})
    pipeline = build_agentic_pipeline(open_document_store(settings, connect=False), settings, require_models=False)
    selector = pipeline.get_component("selector")
    assert (selector.max_local, selector.max_local_unsure) == (4, 6)
