"""benchmarks/pair_reading.py: the sample grows by prefix, the server log is read per call, and the report scores
each reader's order (alone and fused) against the same hybrid rows."""

from benchmarks.metrics import rrf
from benchmarks.pair_reading import ServerLog, report, sample


def test_a_smaller_sample_is_a_prefix_of_a_larger_one_per_slice():
    queries = [{"qid": i, "query": "短问题" if i % 3 else "这是一个足够长的问题" * 4, "gold": ["k"]} for i in range(60)]
    small, large = sample(queries, 5), sample(queries, 10)
    assert [q["qid"] for q in small[:5]] == [q["qid"] for q in large[:5]]  # short
    assert [q["qid"] for q in small[5:]] == [q["qid"] for q in large[10:15]]  # long
    assert all(len(q["query"]) < 30 for q in large[:10]) and all(len(q["query"]) >= 30 for q in large[10:])


def test_the_server_log_is_read_from_where_the_last_call_left_it(tmp_path):
    log = tmp_path / "llm_server.log"
    log.write_text("llama_perf_context_print: prompt eval time =  10.0 ms /    99 tokens\n", encoding="utf-8")
    reader = ServerLog(log)
    with log.open("a", encoding="utf-8") as out:
        out.write("Llama.generate: 71 prefix-match hit, remaining 50 prompt tokens to eval\n"
                  "llama_perf_context_print: prompt eval time =    1062.47 ms /    50 tokens (21.25 ms per token)\n"
                  "llama_perf_context_print: prompt eval time =    900.00 ms /    64 tokens\n")
    assert reader.evaluated() == [50, 64]
    assert reader.evaluated() == []


def test_the_report_scores_each_reader_alone_and_fused_against_one_hybrid_row_per_question():
    queries = [{"qid": 1, "query": "短问题", "gold": ["b"]}]
    hybrid = ["a", "b", "c"]
    records = [{"qid": "1", "reader": "listwise:3:80", "seconds": 2.0, "hybrid": hybrid, "order": ["b", "a", "c"],
                "evaluated": [900]},
               {"qid": "1", "reader": "pointwise:3:80", "seconds": 6.0, "hybrid": hybrid, "order": ["c", "a", "b"],
                "evaluated": [60, 70]}]
    text = report(queries, records, "model")
    rows = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| all |")}
    assert rows["hybrid"].split(" | ")[2] == "1"  # one hybrid row, not one per reader
    assert rows["listwise:3:80"].split(" | ")[3] == "1.000"  # R@1: the gold named first
    assert rows["pointwise:3:80"].split(" | ")[3] == "0.000"
    assert rrf(hybrid, ["c", "a", "b"])[0] == "a" and "RRF(hybrid, pointwise:3:80)" in rows
    assert "| pointwise:3:80 | 6.0 | 6.0 | 65 |" in text
