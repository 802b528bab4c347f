"""Do the rewriter's queries find more gold articles than the question as asked? (No judge in the loop.)

For the first N queries of the agentic benchmark's sample (seed 0), Recall@10 of the hybrid retrieval of:

- ``original``: the question alone (round 1 of the agentic pipeline, and the rag baseline);
- ``rewrite``: the original + `QueryRewriter`'s round-1 variants and keywords (``REWRITE_FIRST_ROUND=true``);
- ``after_note``: the original + the variants the rewriter writes in round 2 from the judge's note on round 1
  (the default flow);
- ``hyde``: the original + a statute-style passage the LLM writes for the question (HyDE).

Separates the rewriter's effect from the judge's choice of round. Writes a Markdown report with per-query rows.

    .venv/bin/python research/rewrite_study.py [--queries PATH] [--sample 30] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from haystack import Pipeline
from haystack.dataclasses import ChatMessage

from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES
from components.evaluators.llm_quality_judge import LLMQualityJudge
from components.generators.query_rewriter import QueryRewriter
from helpers.records.rounds import Round
from llm_access.factory import make_chat_generator
from pipelines.retrieval import retrieve

HYDE_SYSTEM = ("你是中国法律专家。根据用户的问题，写出最可能适用的一条中国法律条文的内容，"
               "用法条的正式措辞（如“……的，应当……”“……承担……责任”），不写法律名称和条文号，不超过120字。只输出条文内容。")
VARIANTS = ("original", "rewrite", "after_note", "hyde")


def rewrite_after_note(judge: LLMQualityJudge, rewriter: QueryRewriter, retrieval: Pipeline,
                       question: str) -> tuple[dict[str, Any], list[str]]:
    """Round 1 (the question alone) judged, then the queries the rewriter writes from the judge's note: what the
    pipeline's round 2 searches. Returns the round-1 evaluation and those queries."""
    evaluation = judge.run(query=question, documents=retrieve(retrieval, [question], top_k=10))["evaluation"]
    first = Round(number=1, queries=[question], documents=[], evaluation=evaluation)
    return evaluation, rewriter.run(query=question, rounds=[first])["queries"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--sample", type=int, default=30, help="the first N of benchmarks/agentic.py's 60")
    parser.add_argument("--out", default="research/reports/rewrite_study.md")
    args = parser.parse_args()
    settings = bench_settings()
    store, pipeline = bench_retrieval(settings)
    generator = make_chat_generator(settings)
    generator.warm_up()
    rewriter = QueryRewriter(rewrite_first_round=True)  # the main model; this study rewrites round 1
    judge = LLMQualityJudge(top_n=settings.judge_top_n, pass_score=settings.pass_score)  # the judge's model
    rewriter.warm_up()
    judge.warm_up()

    def recall(queries: list[str], gold: list[str]) -> float:
        return query_metrics([d.meta["key"] for d in retrieve(pipeline, queries, top_k=10)], gold)["R@10"]

    rows = []
    for i, item in enumerate(random.Random(0).sample(load_queries(args.queries), 60)[: args.sample], start=1):
        question, gold = item["query"], item["gold"]
        evaluation, after_note = rewrite_after_note(judge, rewriter, pipeline, question)
        hyde = generator.run(messages=[ChatMessage.from_system(HYDE_SYSTEM),
                                       ChatMessage.from_user(f"用户问题：{question}")],
                             generation_kwargs={"temperature": 0, "max_tokens": 200})["replies"][0].text or ""
        queries = {"original": [question], "rewrite": rewriter.run(query=question)["queries"],
                   "after_note": after_note,
                   "hyde": [question, hyde.strip()] if hyde.strip() else [question]}
        rows.append({"qid": item["qid"], "judge_total": evaluation["total"],
                     **{name: recall(queries[name], gold) for name in VARIANTS}})
        print(f"{i}/{args.sample} {json.dumps(rows[-1], ensure_ascii=False)}", flush=True)
    store.close()
    means = " | ".join(f"{statistics.mean(r[name] for r in rows):.3f}" for name in VARIANTS)
    changed = "\n".join(f"| {r['qid']} | " + " | ".join(f"{r[n]:.2f}" for n in VARIANTS) + " |"
                        for r in rows if len({r[n] for n in VARIANTS}) > 1)
    header = " | ".join(VARIANTS) + " |"
    report = f"""# Rewrite study (STARD sample)

Command: `.venv/bin/python research/rewrite_study.py {' '.join(sys.argv[1:])}`

Recall@10 of the hybrid retrieval, {len(rows)} queries (the first {args.sample} of the agentic benchmark's sample).

| {header}
|{'---|' * len(VARIANTS)}
| {means} |

Queries where the variants differ:

| qid | {header}
|---|{'---|' * len(VARIANTS)}
{changed}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
