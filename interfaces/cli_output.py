"""What the command line prints: answers (text or JSON), search results, knowledge-base stats and recorded
feedback, warnings to stderr. The same functions print what a running server answers (`interfaces.cli_beside_server`),
so the output is the same either way.

Usage::

    from interfaces.cli_output import print_search
    print_search("个人信息", "hybrid", [{"score": 0.03, "paths": ["bm25"], "key": "…第十三条", "text": "…"}], 0.04)
"""

from __future__ import annotations

import json
import sys
from typing import Any

from application.feedback import AnsweredQuestion, save_last_answer
from config.settings import Settings
from helpers.records.result import RAGResult
from helpers.records.rounds import UNCOVERED


def print_warnings(warnings: list[str]) -> None:
    """A result's or a knowledge base's warnings (see `pipelines.indexing.knowledge_base_warnings`), to stderr."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def print_search(query: str, mode: str, rows: list[dict[str, Any]], seconds: float) -> None:
    """Ranked articles (``score``, ``paths``, ``key``, ``version_mark``, ``text``: the retrieve mode's documents)
    for a terminal."""
    print(f"{len(rows)} results for {query!r} ({mode}, {1000 * seconds:.0f} ms)")
    for rank, row in enumerate(rows, start=1):
        text = (row.get("text") or "").replace("\n", " ")
        print(f"{rank:2d}. {row['score']:.4f} [{','.join(row.get('paths') or [])}] {row.get('key')}"
              f"{row.get('version_mark') or ''}\n    {text[:120]}")


def print_result(result: RAGResult) -> None:
    """Answer, citations and a compact trace for a terminal."""
    print(result.answer)
    if result.citations:
        print("\n引用：")
        for c in result.citations:
            where = c["url"] if c["type"] == "web" else f"{c['law']}{c['article']}{c.get('version_mark', '')}"
            print(f"  - {where}")
    if result.unverified_citations:
        print("未核实的引用：" + "、".join(result.unverified_citations))
    trace = result.trace
    print(f"\n[trace] mode={result.mode} route={trace['route'].get('route')} situation={result.situation} "
          f"needs_human={result.needs_human}")
    for entry in trace["rounds"]:
        evaluation = entry["evaluation"]
        top = ", ".join(r["key"] for r in entry["retrieved"][:3])
        verdict = (f"evaluator P={evaluation['probability']:.2f} (pass at {evaluation['threshold']:.2f})"
                   if evaluation.get("probability") is not None else f"judge {evaluation['total']:.0f}/40")
        print(f"  round {entry['round']}: {len(entry['queries'])} queries ({entry['rewrite']['status']}), "
              f"{verdict} → {entry['decision']}; top: {top}")
        if evaluation.get("error"):
            print(f"    judge error: {evaluation['error']}")
        if evaluation.get("verdict") == UNCOVERED:
            coverage = evaluation["coverage"]
            print(f"    uncovered: the question looks like one whose rule is in 《{coverage['document']}》, which the "
                  f"knowledge base does not hold (P={coverage['probability']:.2f}, flags at "
                  f"{coverage['threshold']:.2f})")
    if trace.get("web"):
        print(f"  web search: {trace['web']['status']} {trace['web'].get('message', '')}")
    print(f"  LLM calls: {trace['llm_calls_total']} {trace['llm_calls']}; {trace.get('total_seconds', 0):.1f} s")


def keep_last_answer(settings: Settings, result: RAGResult, question: str) -> None:
    """What `feedback --last` is about: this answer (its ``answer_id`` given here unless the server gave one)."""
    save_last_answer(settings.data_dir, AnsweredQuestion.of(result, question))


def show_answer(result: RAGResult, as_json: bool) -> None:
    """The result's warnings to stderr, then the result: as JSON, or `print_result`'s text."""
    print_warnings(result.warnings)
    if as_json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2, default=str))
    else:
        print_result(result)


def print_feedback(record: dict[str, Any]) -> None:
    what = "、".join(filter(None, [{"up": "👍", "down": "👎"}.get(record["verdict"] or ""),
                                   record["article"] and f"the right article is {record['article']}"]))
    print(f"feedback recorded on answer {record['answer_id']} ({record['question'][:40]}): {what}")


def print_stats(stats: dict[str, Any]) -> None:
    """`pipelines.knowledge_base_stats.knowledge_base_stats` for a terminal (its warnings to stderr)."""
    print(f"knowledge base '{stats['name']}' at {stats['where']}: {stats['documents']} documents, "
          f"{len(stats['sources'])} sources")
    for record in stats["sources"]:
        print(f"  {record['status']:9s} {record['count']:6d}  {record['source']}")
    print(f"models: {stats['models']}; judge: {stats['judge']}")
    if bm25 := stats["bm25"]:
        print(f"BM25: k1={bm25['k1']:g}, b={bm25['b']:g}, average article length {bm25['average_terms']:.1f} "
              f"terms; searches run on: {stats['engine']}")
    print_warnings(stats["warnings"])
