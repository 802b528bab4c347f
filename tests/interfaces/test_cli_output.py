"""`interfaces.cli_output`: what the command line prints (the same whether the answer came from this process or from
a running server). The commands that print it are run end to end in tests/interfaces/test_cli.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from application.feedback import load_last_answer
from config.settings import Settings
from helpers.records.result import RAGResult
from interfaces.cli_output import (
    keep_last_answer,
    print_feedback,
    print_result,
    print_search,
    print_stats,
    print_warnings,
    show_answer,
)

PIPL = "中华人民共和国个人信息保护法"


def a_round(number: int, evaluation: dict[str, Any], decision: str = "pass") -> dict[str, Any]:
    return {"round": number, "queries": ["q1", "q2"], "rewrite": {"status": "ok"}, "evaluation": evaluation,
            "decision": decision, "retrieved": [{"key": f"{PIPL}第{n}条"} for n in ("十三", "十四", "十五", "十六")]}


def result(**changed: Any) -> RAGResult:
    trace = {"route": {"route": "legal"}, "rounds": [a_round(1, {"probability": 0.873, "threshold": 0.5})],
             "llm_calls_total": 3, "llm_calls": {"rewrite": 1, "answer": 2}, "total_seconds": 12.34}
    fields: dict[str, Any] = {"answer": "需要。依据第十四条。", "mode": "agentic", "trace": trace,
                              "situation": "sufficient"}
    return RAGResult(**{**fields, **changed})


def test_warnings_go_to_stderr_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    print_warnings(["source law:民法典 is incomplete", "BM25 weights are stale"])
    out, err = capsys.readouterr()
    assert out == "" and err == "warning: source law:民法典 is incomplete\nwarning: BM25 weights are stale\n"


def test_search_rows_are_ranked_with_score_paths_key_version_and_the_start_of_the_text(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"score": 0.0328, "paths": ["bm25", "dense"], "key": f"{PIPL}第十三条", "version_mark": "",
             "text": "第十三条\n符合下列情形之一的" + "，" * 200},
            {"score": 0.01, "paths": [], "key": "民法典第一条", "version_mark": "（2020年版）", "text": None}]
    print_search("个人信息", "hybrid", rows, 0.0415)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "2 results for '个人信息' (hybrid, 42 ms)"
    assert lines[1] == f" 1. 0.0328 [bm25,dense] {PIPL}第十三条"
    assert lines[2] == "    " + ("第十三条 符合下列情形之一的" + "，" * 200)[:120]  # one line, its first 120 characters
    assert lines[3] == " 2. 0.0100 [] 民法典第一条（2020年版）" and lines[4] == "    "


def test_no_search_results_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    print_search("无关", "bm25", [], 0.001)
    assert capsys.readouterr().out == "0 results for '无关' (bm25, 1 ms)\n"


def test_an_answer_prints_its_citations_and_a_trace_of_each_round(capsys: pytest.CaptureFixture[str]) -> None:
    rounds = [a_round(1, {"total": 20.0, "error": "timeout"}, "retry"), a_round(2, {"probability": 0.873,
                                                                                     "threshold": 0.5})]
    answer = result(citations=[{"type": "statute", "law": PIPL, "article": "第十四条"},
                               {"type": "statute", "law": "民法典", "article": "第一条", "version_mark": "（旧）"},
                               {"type": "web", "url": "https://example.org/a"}],
                    unverified_citations=["民法典第九千条"], needs_human=True)
    answer.trace["rounds"] = rounds
    answer.trace["web"] = {"status": "skipped_no_key", "message": "no SERPAPI_API_KEY"}
    print_result(answer)
    out = capsys.readouterr().out
    assert out.startswith("需要。依据第十四条。\n\n引用：\n")
    assert f"  - {PIPL}第十四条\n  - 民法典第一条（旧）\n  - https://example.org/a\n" in out
    assert "未核实的引用：民法典第九千条\n" in out
    assert "[trace] mode=agentic route=legal situation=sufficient needs_human=True" in out
    assert ("  round 1: 2 queries (ok), judge 20/40 → retry; top: "
            f"{PIPL}第十三条, {PIPL}第十四条, {PIPL}第十五条\n    judge error: timeout\n") in out
    assert "  round 2: 2 queries (ok), evaluator P=0.87 (pass at 0.50) → pass; top:" in out
    assert "  web search: skipped_no_key no SERPAPI_API_KEY\n" in out
    assert out.endswith("  LLM calls: 3 {'rewrite': 1, 'answer': 2}; 12.3 s\n")


def test_an_uncovered_round_names_the_document_the_knowledge_base_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    evaluation = {"probability": 0.2, "threshold": 0.5, "verdict": "uncovered",
                  "coverage": {"document": "民间借贷规定", "probability": 0.91, "threshold": 0.6}}
    answer = result()
    answer.trace["rounds"] = [a_round(1, evaluation, "stop")]
    print_result(answer)
    out = capsys.readouterr().out
    assert ("    uncovered: the question looks like one whose rule is in 《民间借贷规定》, which the knowledge base "
            "does not hold (P=0.91, flags at 0.60)\n") in out
    assert "引用" not in out and "未核实" not in out and "web search" not in out


def test_show_answer_prints_warnings_first_then_text_or_json(capsys: pytest.CaptureFixture[str]) -> None:
    answer = result(warnings=["the knowledge base was indexed with another embedder"], answer_id="a1")
    show_answer(answer, as_json=True)
    out, err = capsys.readouterr()
    assert err == "warning: the knowledge base was indexed with another embedder\n"
    assert json.loads(out) == answer.to_dict() and "需要。" in out  # not \\u-escaped
    show_answer(answer, as_json=False)
    assert capsys.readouterr().out.startswith("需要。依据第十四条。\n\n[trace]")


def test_the_kept_answer_is_what_feedback_last_reads(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    answer = result(evidence=[{"key": f"{PIPL}第十四条"}], citations=[
        {"type": "statute", "key": f"{PIPL}第十四条", "law": PIPL, "article": "第十四条"}], knowledge_base="pipl")
    keep_last_answer(settings, answer, "公司收集我的个人信息需要我同意吗")
    kept = load_last_answer(tmp_path)
    assert answer.answer_id and kept.answer_id == answer.answer_id  # given one here
    assert (kept.question, kept.cited, kept.knowledge_base) == ("公司收集我的个人信息需要我同意吗",
                                                                (f"{PIPL}第十四条",), "pipl")
    served = result(answer_id="from-the-server")
    keep_last_answer(settings, served, "问")
    assert load_last_answer(tmp_path).answer_id == "from-the-server"  # the server's id is kept


@pytest.mark.parametrize(("verdict", "article", "said"), [
    ("up", None, "👍"), ("down", f"{PIPL}第十四条", f"👎、the right article is {PIPL}第十四条"),
    (None, "民法典第一条", "the right article is 民法典第一条"),
])
def test_recorded_feedback_is_one_line(capsys: pytest.CaptureFixture[str], verdict: str | None, article: str | None,
                                       said: str) -> None:
    print_feedback({"answer_id": "a1", "question": "公司收集我的个人信息需要我同意吗" * 3, "verdict": verdict,
                    "article": article})
    question = ("公司收集我的个人信息需要我同意吗" * 3)[:40]
    assert capsys.readouterr().out == f"feedback recorded on answer a1 ({question}): {said}\n"


def test_stats_print_sources_models_bm25_and_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    stats = {"name": "statutes", "where": "data/qdrant", "documents": 74, "models": "e5-small", "judge": "the LLM",
             "sources": [{"status": "complete", "count": 74, "source": f"law:{PIPL}"}],
             "bm25": {"k1": 1.2, "b": 0.75, "average_terms": 61.234}, "engine": "qdrant sparse vectors",
             "warnings": ["stale weights"]}
    print_stats(stats)
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "knowledge base 'statutes' at data/qdrant: 74 documents, 1 sources",
        f"  complete      74  law:{PIPL}",
        "models: e5-small; judge: the LLM",
        "BM25: k1=1.2, b=0.75, average article length 61.2 terms; searches run on: qdrant sparse vectors"]
    assert err == "warning: stale weights\n"
    print_stats({**stats, "sources": [], "documents": 0, "bm25": None, "warnings": []})
    out, err = capsys.readouterr()
    assert "BM25" not in out and "0 documents, 0 sources" in out and err == ""
