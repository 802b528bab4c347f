"""How much should the question itself weigh against its rewrites when a later round fuses them?

A later round of the agentic pipeline searches the original question beside the rewriter's variants and keywords,
and `RRFJoiner` fuses all their rankings. With equal weights, three or four rewrites can outvote what the question
itself found and push its hits out of the top 5 — the articles the answer is written from. This study fuses the
same rankings with the question's rankings weighted 1 (equal), 1.5, 2, 3 … (`RRFJoiner(primary_weight=…)`) and
reports Recall@5 and Recall@10 against the question alone (round 1, the rag baseline).

The rewritten queries come either from an agentic benchmark log (``--log``: each query's best round, chosen from
the logged judge totals by `RoundTracker`'s rule) or are written afresh on another sample (``--seed``/``--sample``:
round 1 retrieved and judged, then the rewriter given the judge's note, as in the pipeline's round 2; kept in
``--cache`` so that a rerun needs no LLM).

    .venv/bin/python research/query_weight_study.py --log benchmarks/runs/agentic_runs.jsonl [--out PATH]
    .venv/bin/python research/query_weight_study.py --seed 2 --sample 40 --cache PATH [--out PATH]
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

from benchmarks.agentic import read_log
from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES
from components.joiners.rrf_joiner import RRFJoiner
from helpers.records.contracts import RETRIEVAL_PATHS
from pipelines.retrieval import PATH_WEIGHTS, retrieval_inputs, retrieve
from research.answer_prompt_study import best_round
from research.rewrite_study import rewrite_after_note

PATHS = RETRIEVAL_PATHS


def logged_rounds(log: Path, by_qid: dict[int, dict]) -> list[dict[str, Any]]:
    """Question and best-round queries of every agentic row of a benchmark log that retrieved."""
    rows = read_log(log, ["agentic"])["agentic"]
    return [{"qid": qid, "query": by_qid[qid]["query"], "queries": best_round(row["rounds"])["queries"]}
            for qid, row in rows.items() if row["rounds"]]


def written_rounds(items: list[dict], cache: Path, retrieval: Pipeline) -> list[dict[str, Any]]:
    """Round-2 queries written as the pipeline writes them (judge's note on round 1 → rewriter), cached."""
    from components.evaluators.llm_quality_judge import LLMQualityJudge
    from components.generators.query_rewriter import QueryRewriter

    settings = bench_settings()
    done = {}
    if cache.exists():
        done = {row["qid"]: row for row in map(json.loads, cache.read_text(encoding="utf-8").splitlines()) if row}
    missing = [item for item in items if item["qid"] not in done]
    if missing:
        judge = LLMQualityJudge(top_n=settings.judge_top_n, pass_score=settings.pass_score)
        rewriter = QueryRewriter()
        judge.warm_up()
        rewriter.warm_up()
        with cache.open("a", encoding="utf-8") as handle:
            for i, item in enumerate(missing, start=1):
                _, queries = rewrite_after_note(judge, rewriter, retrieval, item["query"])
                row = {"qid": item["qid"], "query": item["query"], "queries": queries}
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                handle.flush()
                done[item["qid"]] = row
                print(f"{i}/{len(missing)} {json.dumps(row, ensure_ascii=False)}", flush=True)
    return [done[item["qid"]] for item in items]


def rankings_of(retrieval: Pipeline, queries: list[str]) -> list:
    """Every path's rankings of every query, before fusion."""
    out = retrieval.run(retrieval_inputs(retrieval, queries), include_outputs_from=set(PATHS))
    return [ranking for name in PATHS for ranking in out[name]["rankings"]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--log", help="an agentic benchmark log (its best rounds' queries)")
    parser.add_argument("--seed", type=int, default=2, help="without --log: the sample to write rewrites for")
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--cache", default="benchmarks/runs/query_weight_rewrites.jsonl",
                        help="without --log: where the written rewrites are kept")
    parser.add_argument("--weights", default="1,1.5,2,3", help="primary_weight values; 1 = equal weights")
    parser.add_argument("--out", default="research/reports/query_weight_study.md")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    items = load_queries(args.queries)
    by_qid = {item["qid"]: item for item in items}
    store, retrieval = bench_retrieval(bench_settings())
    try:
        if args.log:
            rounds, source = logged_rounds(Path(args.log), by_qid), f"the best rounds logged in `{args.log}`"
        else:
            sample = random.Random(args.seed).sample(items, args.sample)
            rounds = written_rounds(sample, Path(args.cache), retrieval)
            source = (f"round-2 rewrites written for {args.sample} queries drawn with seed {args.seed} "
                      f"(kept in `{args.cache}`)")
        rows = []
        for entry in rounds:
            gold = by_qid[entry["qid"]]["gold"]
            alone = [d.meta["key"] for d in retrieve(retrieval, [entry["query"]], top_k=10)]
            rankings = rankings_of(retrieval, entry["queries"])
            row = {"qid": entry["qid"], "alone": query_metrics(alone, gold)}
            for weight in weights:
                joiner = RRFJoiner(top_k=10, path_weights=PATH_WEIGHTS, primary_weight=weight)
                fused = joiner.run(rankings=[rankings], primary_query=entry["query"])["documents"]
                row[weight] = query_metrics([d.meta["key"] for d in fused], gold)
            rows.append(row)
    finally:
        store.close()

    def line(name: str, key: Any) -> str:
        cells = []
        for k in ("R@5", "R@10"):
            ours = [r[key][k] for r in rows]
            base = [r["alone"][k] for r in rows]
            better = sum(a > b for a, b in zip(ours, base))
            worse = sum(a < b for a, b in zip(ours, base))
            cells.append(f"{statistics.mean(ours):.3f} (+{better} / −{worse})")
        return f"| {name} | " + " | ".join(cells) + " |"

    table = "\n".join([line("question alone (round 1 = rag)", "alone")]
                      + [line(f"question + rewrites, question weight {w:g}", w) for w in weights])
    report = f"""# Question weight in a rewritten round's fusion (STARD sample)

Command: `.venv/bin/python research/query_weight_study.py {' '.join(sys.argv[1:])}`
Queries: {len(rows)}, {source}. Hybrid retrieval (citation + BM25 + dense, RRF), top 10.
(+b / −w): queries better / worse than the question alone.

| fusion | Recall@5 | Recall@10 |
|---|---|---|
{table}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
