"""Does the judge tell good evidence from bad? Judge scores vs whether a gold article is in what it read.

For a fixed random sample of STARD queries: the hybrid top-N of the question as asked (round 1 of the agentic
pipeline), judged by `LLMQualityJudge` with the LLM the settings resolve. Reports the pass rate and mean total
when a gold article is among the judged passages and when none is, and the AUC of the total for that split
(0.5 = no better than chance).

    .venv/bin/python benchmarks/judge_calibration.py [--queries PATH] [--sample 20] [--seed 7] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from components.llm_quality_judge import LLMQualityJudge
from pipelines.llm import resolve_endpoint
from pipelines.retrieval import retrieve


def auc(positives: list[float], negatives: list[float]) -> float:
    """P(a positive outscores a negative), ties counting half."""
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def summary(rows: list[dict], pass_score: int) -> str:
    lines = []
    for label, group in (("gold among the judged passages", [r for r in rows if r["gold_judged"]]),
                         ("no gold among them", [r for r in rows if not r["gold_judged"]])):
        if group:
            totals = [r["total"] for r in group]
            lines.append(f"| {label} | {len(group)} | {sum(t >= pass_score for t in totals)} | "
                         f"{statistics.mean(totals):.1f} | {min(totals):.0f}–{max(totals):.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7, help="not 0: a different sample from benchmarks/agentic.py")
    parser.add_argument("--out", default="benchmarks/reports/judge_calibration.md")
    args = parser.parse_args()
    settings = bench_settings()
    store, pipeline = bench_retrieval(settings)
    judge = LLMQualityJudge(top_n=settings.judge_top_n, pass_score=settings.pass_score)
    judge.warm_up()
    rows = []
    for i, item in enumerate(random.Random(args.seed).sample(load_queries(args.queries), args.sample), start=1):
        documents = retrieve(pipeline, [item["query"]], top_k=10)
        judged = {d.meta.get("key") for d in documents[: settings.judge_top_n]}
        evaluation = judge.run(query=item["query"], documents=documents)["evaluation"]
        rows.append({"qid": item["qid"], "gold_judged": bool(judged & set(item["gold"])),
                     "total": evaluation["total"], "error": evaluation["error"], "seconds": evaluation["seconds"]})
        print(f"{i}/{args.sample} {json.dumps(rows[-1], ensure_ascii=False)}", flush=True)
    store.close()
    hits = [r["total"] for r in rows if r["gold_judged"]]
    misses = [r["total"] for r in rows if not r["gold_judged"]]
    endpoint = resolve_endpoint(settings)
    report = f"""# Judge calibration (STARD sample)

Command: `.venv/bin/python benchmarks/judge_calibration.py {' '.join(sys.argv[1:])}`
{args.sample} queries drawn with seed {args.seed} from `{Path(args.queries).name}`; the judge reads the hybrid top
{settings.judge_top_n} of the question as asked. LLM: {endpoint.kind} (`{endpoint.model}`); pass at
{settings.pass_score}/40. Judge errors: {sum(bool(r['error']) for r in rows)}; median
{statistics.median(r['seconds'] for r in rows):.1f} s per judgement.

| judged passages | queries | passed | mean total /40 | range |
|---|---|---|---|---|
{summary(rows, settings.pass_score)}

AUC of the total (gold judged vs not): **{auc(hits, misses):.3f}** (0.5 = chance).

Per-query rows: {json.dumps(rows, ensure_ascii=False)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
