from benchmarks.agentic import sample_queries, score
from helpers.records.result import RAGResult


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
