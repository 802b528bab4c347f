import argparse

import pytest

from benchmarks.agentic import question_folds, sample_queries, score, write_report
from benchmarks.folds import fold_assignment, outside_fold_assignment
from helpers.checks.unsettled import UNSETTLED_PREFIX
from helpers.records.result import RAGResult
from provisioning.coverage_training import OutsideQuestion


def questions() -> list[dict]:
    return [{"qid": i, "query": "问" * length, "gold": []} for i, length in enumerate([10, 35, 30, 12, 80, 29])]


def test_min_chars_samples_only_long_questions_and_the_same_ones_each_time():
    sample = sample_queries(questions(), 2, seed=0, min_chars=30)
    assert len(sample) == 2 and all(len(q["query"]) >= 30 for q in sample)
    assert sample == sample_queries(questions(), 2, seed=0, min_chars=30)
    assert sorted(q["qid"] for q in sample_queries(questions(), 10, seed=0, min_chars=30)) == [1, 2, 4]
    assert len(sample_queries(questions(), 10, seed=0)) == 6


def test_the_round_rerankers_calls_are_counted_apart_from_the_loops():
    trace = {"rounds": [], "route": {"retrieved": [{"key": "甲法第一条"}, {"key": "甲法第二条"}]},
             "llm_calls": {"rewriter": 1, "answer": 1, "reranker": 37}, "llm_calls_total": 39, "total_seconds": 80.0}
    row = score(RAGResult(answer="……", mode="rag", trace=trace), ["甲法第二条", "甲法第九条"])
    assert row["llm_calls"] == 2 and row["reranker_calls"] == 37
    assert row["recall@10"] == 0.5


def unanswerable_result(situation: str, answer: str, web: dict | None) -> RAGResult:
    trace = {"rounds": [], "route": {}, "web": web, "llm_calls": {"judge": 0, "answer": 1}, "llm_calls_total": 2,
             "total_seconds": 30.0}
    return RAGResult(answer=answer, mode="agentic", trace=trace, situation=situation)


def test_a_question_without_gold_is_scored_by_what_the_answer_does():
    passed = score(unanswerable_result("sufficient", "根据《民法典》第六百六十七条……", None), [])
    assert passed["sufficient"] and not passed["web_search"] and not passed["not_settled"]
    assert "recall@10" not in passed and passed["llm_calls"] == 2
    web = {"status": "unavailable", "message": "未配置", "results": []}
    honest = score(unanswerable_result("partial", f"{UNSETTLED_PREFIX}问题中“利率上限”……\n\n……", web), [])
    assert not honest["sufficient"] and honest["web_search"] and honest["not_settled"]
    assert score(unanswerable_result("none", "没有找到", None), [])["not_settled"]


def test_out_of_corpus_questions_get_the_fold_of_their_split_and_unknown_ones_are_refused():
    training = [{"qid": 1, "query": "问", "gold": ["甲法第一条"]}, {"qid": 2, "query": "问", "gold": ["甲法第二条"]}]
    outside = [OutsideQuestion("问", doc, str(100 + i))
               for i, doc in enumerate(["规定甲", "规定甲", "条例乙", "规定甲", "办法丙"])]
    by_document = outside_fold_assignment(outside, "document")
    assert by_document[0] == by_document[1] == by_document[3] and len({by_document[i] for i in (0, 2, 4)}) == 3
    sampled = [{"qid": 2}, {"qid": 101}, {"qid": 104}]
    folds = question_folds(sampled, training, outside, by_document)
    assert folds == {2: fold_assignment(2)[1], 101: by_document[1], 104: by_document[4]}
    with pytest.raises(ValueError, match="qid 999"):
        question_folds([{"qid": 999}], training, outside, by_document)
    with pytest.raises(ValueError, match="document or question"):
        outside_fold_assignment(outside, "law")


def test_the_report_puts_unanswerable_questions_in_a_table_of_their_own(tmp_path):
    rows = {"agentic": {1: {"recall@10": 1.0, "citation_recall": 1.0, "llm_calls": 2, "seconds": 40.0},
                        2: {"sufficient": False, "web_search": True, "not_settled": True, "llm_calls": 5,
                            "seconds": 90.0},
                        3: {"sufficient": True, "web_search": False, "not_settled": False, "llm_calls": 2,
                            "seconds": 40.0}}}
    args = argparse.Namespace(queries="q.jsonl", seed=0, min_chars=0, log="log.jsonl", out=str(tmp_path / "r.md"))
    report = write_report(args, 3, rows, "")
    unanswerable = report.split("cannot answer")[1]
    assert "| agentic | 2 | 0.500 | 0.500 | 0.500 | 0.500 | 4 |" in unanswerable
    assert "| agentic | 1 | 1.000 | 1.000 | – | 2 |" in report.split("cannot answer")[0]
