import math
from pathlib import Path

import pytest

from benchmarks.agentic import no_answer_message, round_summaries
from benchmarks.judge_calibration import auc
from benchmarks.metrics import mean_metrics, percentile, query_metrics
from helpers.records.result import RAGResult


def test_metrics_on_a_hand_made_ranking():
    m = query_metrics(["a", "x", "b", "y"], ["b", "a", "z"])
    assert m["R@1"] == pytest.approx(1 / 3)
    assert m["R@3"] == pytest.approx(2 / 3)
    assert m["Hit@1"] == 1.0
    assert m["MRR@10"] == 1.0
    dcg = 1 / math.log2(2) + 1 / math.log2(4)
    idcg = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["nDCG@10"] == pytest.approx(dcg / idcg)


def test_duplicates_count_once_and_miss_is_zero():
    m = query_metrics(["x", "x", "x", "g"], ["g"])
    assert m["R@1"] == 0.0 and m["R@3"] == 1.0 and m["MRR@10"] == 0.5
    assert query_metrics([], ["g"])["nDCG@10"] == 0.0


def test_mean_and_percentile():
    assert mean_metrics([{"R@1": 1.0}, {"R@1": 0.0}]) == {"R@1": 0.5}
    assert percentile([5, 1, 3, 2, 4], 50) == 3
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95) == 10


def test_judge_auc_counts_wins_and_half_ties():
    assert auc([30, 20], [10]) == 1.0
    assert auc([27, 27], [27, 10]) == 0.75  # two ties (½ each) and two wins of four pairs
    assert auc([10], [20]) == 0.0
    assert math.isnan(auc([], [1.0]))


def test_agentic_rows_keep_each_round_for_offline_analysis():
    retrieved = [{"key": f"k{i}", "score": 1.0, "paths": ["bm25"]} for i in range(25)]
    result = RAGResult(answer="", mode="agentic",
                       trace={"rounds": [{"round": 1, "queries": ["q"], "retrieved": retrieved,
                                          "evaluation": {"total": 27.0}}]})
    assert round_summaries(result) == [{"round": 1, "total": 27.0, "queries": ["q"],
                                        "keys": [f"k{i}" for i in range(20)]}]
    assert round_summaries(RAGResult(answer="", mode="rag", trace={"rounds": []})) == []  # rag mode: no rounds


def test_a_section_cut_mid_sentence_is_broken_but_one_ending_in_a_list_item_is_not():
    """Found by the answers benchmark: a complete 【尚缺信息】 list counted as broken for lack of a full stop."""
    from benchmarks.answers import broken_sections

    listed = "【尚缺信息】\n需要知道：\n- 违法行为的类型\n- 造成的后果\n【建议】补充说明。"
    assert broken_sections(listed) == 0
    assert broken_sections("【尚缺信息】还缺少关于\n【建议】补充说明。") == 1  # the fragment
    assert broken_sections("【尚缺信息】\n【建议】补充说明。") == 1  # empty


def test_a_run_stopped_by_the_llm_says_why_and_how_to_resume():
    """It used to crash with a TypeError (the result indexed like a dict) instead of saying this."""
    result = RAGResult(answer="", mode="agentic", trace={}, answer_error="LLM unavailable: APITimeoutError")
    message = no_answer_message(971, "agentic", result, Path("runs/log.jsonl"), Path("data"))
    assert "query 971 (agentic)" in message and "APITimeoutError" in message
    assert "data/llm_server.log" in message and "--resume" in message


def test_out_of_corpus_folds_keep_each_cited_document_in_one_fold():
    from benchmarks.folds import grouped_fold_assignment

    cited = ["借贷规定"] * 5 + ["担保解释"] * 4 + ["物业条例"] * 2 + ["甲", "乙", "丙"]
    folds = grouped_fold_assignment(cited, folds=3)
    for document in set(cited):
        assert len({f for f, c in zip(folds, cited, strict=True) if c == document}) == 1
    assert sorted(folds.count(k) for k in range(3)) == [4, 5, 5]  # largest first, each into the lightest fold


def test_judge_slices_put_out_of_corpus_passes_beside_the_in_corpus_ones():
    """Out-of-corpus questions have no gold: a slice of their own, where every pass is a wrong pass."""
    from benchmarks.judge_calibration import IN_CORPUS, OUT_OF_CORPUS, slices_table

    def row(kind, chars, good, probability, gold=("某法第一条",)):
        return {"kind": kind, "chars": chars, "labels": [int(good), 0, 0, 0, 0], "probability": probability,
                "threshold": 0.5, "gold": list(gold)}

    rows = [row(IN_CORPUS, 10, True, 0.9), row(IN_CORPUS, 10, False, 0.2), row(IN_CORPUS, 40, True, 0.4),
            row(IN_CORPUS, 40, False, 0.6), row(OUT_OF_CORPUS, 20, False, 0.7, ()),
            row(OUT_OF_CORPUS, 35, False, 0.3, ()), row(OUT_OF_CORPUS, 12, False, 0.8, ())]
    lines = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in slices_table(rows, 5).splitlines()}
    short, long_, outside = lines["short (< 30 characters)"], lines["long (>= 30 characters)"], \
        lines["out of corpus (evaluator folds grouped by the cited document)"]
    assert short[:4] == ["2", "0.500", "0.500", "+0.000"] and short[4] == "1.000"
    assert long_[:4] == ["2", "0.500", "0.500", "+0.000"] and long_[4] == "0.000"
    assert outside[:4] == ["3", "0.000", "0.667", "+0.667"] and outside[4] == "nan"
    assert lines["gold in the 刑法"][0] == "not run"
    assert "coverage check" not in slices_table(rows, 5)  # not run: no columns for it
    # the coverage check after the judge: a flagged question does not pass, good evidence or not
    for r, flagged in zip(rows, [True, False, False, False, True, False, False], strict=True):
        r["flagged"] = flagged
    lines = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in slices_table(rows, 5).splitlines()}
    assert lines["short (< 30 characters)"][7:] == ["0.000", "0.500", "-0.500 |"]
    assert lines["out of corpus (evaluator folds grouped by the cited document)"][7:] == ["0.333", "0.333", "+0.333 |"]


def test_the_coverage_check_flags_rows_with_the_model_of_their_fold(tmp_path, monkeypatch):
    from benchmarks.folds import fold_assignment
    from benchmarks.judge_calibration import IN_CORPUS, OUT_OF_CORPUS, flag_coverage
    from provisioning.training_pairs import Pair

    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path))
    asks = ["吗", "怎么办", "如何处理", "有什么规定", "需要承担什么责任"]
    pairs = [Pair(f"{topic}{ask}", ("某法第一条",), str(i * 10 + j))
             for i, topic in enumerate(("劳动合同解除", "公司收集个人信息", "房屋买卖违约", "离婚财产分割",
                                        "交通肇事逃逸", "遗嘱继承顺序", "商标侵权赔偿", "未成年人监护"))
             for j, ask in enumerate(asks)]
    outside = [{"qid": 900 + i, "query": f"民间借贷{topic}{ask}", "cited": ["借贷规定"]}
               for i, (topic, ask) in enumerate((t, a) for t in ("利息过高", "转贷牟利", "复利约定", "借条利率",
                                                                  "砍头息", "逾期利息") for a in asks)]
    fold_of = fold_assignment(len(pairs))
    rows = [{"qid": p.qid, "kind": IN_CORPUS, "fold": fold_of[i]} for i, p in enumerate(pairs)]
    rows += [{"qid": str(q["qid"]), "kind": OUT_OF_CORPUS, "fold": 0} for q in outside]
    flag_coverage(rows, pairs, [], outside, "question", 5)
    inside_flags = [r["flagged"] for r in rows if r["kind"] == IN_CORPUS]
    outside_flags = [r["flagged"] for r in rows if r["kind"] == OUT_OF_CORPUS]
    assert sum(outside_flags) > len(outside_flags) / 2 and sum(inside_flags) < len(inside_flags) / 4
    assert len(list(tmp_path.glob("coverage-*"))) == 5  # one model per fold, cached like the shipped one
