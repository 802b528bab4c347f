"""CoverageCheck: the third verdict from the question, silenced once the named document is indexed."""

import json

import pytest
from haystack import Pipeline

from components.evaluators.coverage_check import COVERAGE_FILE, GAP_NOTE, CoverageCheck, document_name
from config.settings import Settings
from pipelines.indexing import Indexer, file_sources
from pipelines.stores import open_document_store
from pipelines.yaml_export import ALLOWED_MODULES
from tests.conftest import LENDING

LOAN_QUESTION = "借条约定的利率超过上限怎么办"
PIPL_QUESTION = "公司收集个人信息需要同意吗"
PASSED = {"judge": "evaluator", "passed": True, "total": 30.0, "missing": "", "probability": 0.75}


def checked(check: CoverageCheck, query: str, evaluation: dict | None = None) -> dict:
    return check.run(query=query, evaluation=dict(evaluation or PASSED))["evaluation"]


def test_a_question_about_a_document_the_store_lacks_is_uncovered_and_names_it(tiny_coverage, pipl_store):
    check = CoverageCheck(model=str(tiny_coverage), document_store=pipl_store)
    check.warm_up()
    evaluation = checked(check, LOAN_QUESTION)
    assert evaluation["verdict"] == "uncovered" and evaluation["passed"] is False
    assert evaluation["evidence_passed"] is True  # the judge's own verdict is kept beside it
    assert evaluation["coverage"]["document"] == LENDING and evaluation["coverage"]["flagged"]
    assert evaluation["coverage"]["probability"] >= evaluation["coverage"]["threshold"]
    assert evaluation["missing"] == GAP_NOTE.format(document=LENDING) and "index --files" in evaluation["missing"]
    assert evaluation["probability"] == 0.75  # the judge's figures stay


def test_a_question_the_corpus_answers_keeps_the_judges_verdict(tiny_coverage, pipl_store):
    check = CoverageCheck(model=str(tiny_coverage), document_store=pipl_store)
    check.warm_up()
    for verdict in (True, False):
        evaluation = checked(check, PIPL_QUESTION, {**PASSED, "passed": verdict})
        assert "verdict" not in evaluation and evaluation["passed"] is verdict
        assert evaluation["coverage"]["flagged"] is False and evaluation["missing"] == ""


def test_once_the_named_document_is_indexed_the_check_is_silent(tiny_coverage, tmp_path, e5_model):
    settings = Settings(qdrant_path=tmp_path / "qdrant", embedding_model=str(e5_model))
    rules = tmp_path / f"{LENDING}.md"
    rules.write_text(f"# {LENDING}\n第一条 借贷双方约定的利率超过合同成立时一年期贷款市场报价利率四倍的，不予支持。\n",
                     encoding="utf-8")
    store = open_document_store(settings)
    try:
        check = CoverageCheck(model=str(tiny_coverage), document_store=store)
        check.warm_up()
        assert checked(check, LOAN_QUESTION)["verdict"] == "uncovered"
        Indexer(store, settings).index(file_sources([str(rules)]), progress=False)
        evaluation = checked(check, LOAN_QUESTION)
        assert "verdict" not in evaluation and evaluation["passed"] is True
        assert evaluation["coverage"]["document"] == LENDING and not evaluation["coverage"]["flagged"]
    finally:
        store.close()


def test_document_names_compare_without_the_state_prefix_and_brackets():
    assert (document_name("中华人民共和国政府信息公开条例") == document_name("《政府信息公开条例》")
            == "政府信息公开条例")


def test_it_round_trips_through_a_pipeline_dump(tiny_coverage, pipl_store):
    check = CoverageCheck(model=str(tiny_coverage), document_store=pipl_store, threshold=0.9)
    pipeline = Pipeline()
    pipeline.add_component("coverage", check)
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES).get_component("coverage")
    assert loaded.to_dict() == check.to_dict()
    assert loaded.document_store is pipl_store  # this process's open store, shared
    alone = CoverageCheck(model=str(tiny_coverage))
    assert CoverageCheck.from_dict(alone.to_dict()).to_dict() == alone.to_dict()


def test_a_higher_threshold_flags_nothing(tiny_coverage):
    check = CoverageCheck(model=str(tiny_coverage), threshold=0.999)
    check.warm_up()
    assert "verdict" not in checked(check, LOAN_QUESTION)


def test_bad_settings_and_bad_models_are_clear_errors(tiny_coverage, tmp_path):
    with pytest.raises(ValueError, match="threshold"):
        CoverageCheck(model=str(tiny_coverage), threshold=1.5)
    with pytest.raises(ValueError, match="not a trained coverage model.*COVERAGE_CHECK=off"):
        CoverageCheck(model=str(tmp_path)).warm_up()
    (tmp_path / COVERAGE_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="unreadable"):
        CoverageCheck(model=str(tmp_path)).warm_up()
    trained = json.loads((tiny_coverage / COVERAGE_FILE).read_text(encoding="utf-8"))
    (tmp_path / COVERAGE_FILE).write_text(json.dumps({**trained, "coef": trained["coef"][:3]}), encoding="utf-8")
    with pytest.raises(ValueError, match="incomplete"):
        CoverageCheck(model=str(tmp_path)).warm_up()
    with pytest.raises(RuntimeError, match="warm_up"):
        CoverageCheck(model=str(tiny_coverage)).run(query=LOAN_QUESTION, evaluation=PASSED)
