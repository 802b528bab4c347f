"""Does the answer prompt make the model cite fewer gold articles when the judge did not pass the evidence?

`benchmarks/agentic.py` found that the model's own citations recall fewer gold articles in agentic mode (whose
answers, with the local judge, are nearly all ``partial``) than in rag mode (``unjudged``). This study holds the
evidence fixed and varies only the answer prompt's situation, over the queries of an agentic benchmark log:

- ``rag/unjudged``: the evidence of the question alone (round 1 = the rag baseline), the ``unjudged`` prompt;
- ``agentic/unjudged``: the agentic run's best-round evidence (its logged queries retrieved again), same prompt;
- ``agentic/judged``: the same evidence, judged again for the answer's situation and note (``partial`` unless the
  judge passes it or rates its relevance ≤ 1), as the agentic pipeline answers.

Metric: citation recall of the model's own verified citations (and with the appended article lists). A query whose
top-5 evidence (what the answer sees) holds no gold article scores 0 without an LLM call: no verified citation can
name a gold article then. Writes a Markdown report with per-query rows.

    .venv/bin/python research/answer_prompt_study.py [--log benchmarks/runs/agentic_runs.jsonl] [--seed 0] [--out PATH]
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

from haystack import Document, Pipeline

from benchmarks.agentic import citation_recalls, read_log
from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from components.builders.evidence_selector import EvidenceSelector
from components.evaluators.llm_quality_judge import LLMQualityJudge
from components.routers.round_tracker import RoundTracker
from helpers.records import rounds as loop_rounds
from helpers.records.rounds import Round
from pipelines.agentic import add_answer_stage
from pipelines.retrieval import retrieve

VARIANTS = ("rag/unjudged", "agentic/unjudged", "agentic/judged")
SEEN = EvidenceSelector().max_local  # articles the answer prompt is given


def best_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round whose evidence the agentic answer used, chosen from the logged judge totals by the pipeline's own
    rule (`helpers.records.rounds.best_round`: the highest total, a tie to the later round)."""
    records = [Round(number=i, queries=[], documents=[], evaluation={"total": entry["total"]})
               for i, entry in enumerate(rounds, start=1)]
    best = loop_rounds.best_round(records)
    assert best is not None
    return rounds[best.number - 1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--log", default="benchmarks/runs/agentic_runs.jsonl", help="an agentic benchmark log")
    parser.add_argument("--sample", type=int, default=60, help="the sample size of that benchmark run")
    parser.add_argument("--seed", type=int, default=0, help="the sample seed of that benchmark run")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"a subset of {','.join(VARIANTS)}")
    parser.add_argument("--out", default="research/reports/answer_prompt_study.md")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    settings = bench_settings()
    store, retrieval = bench_retrieval(settings)
    judge = LLMQualityJudge(top_n=settings.judge_top_n, pass_score=settings.pass_score)
    judge.warm_up()
    answer_stage = Pipeline()
    add_answer_stage(answer_stage)
    logged = read_log(Path(args.log), ["agentic"])["agentic"]
    sample = random.Random(args.seed).sample(load_queries(args.queries), args.sample)
    items = [item for item in sample if logged.get(item["qid"], {}).get("rounds")]

    def answer(question: str, gold: list[str], **candidates: Any) -> dict[str, Any]:
        """``candidates``: ``rounds`` (judged) or ``documents`` (unjudged), as the answer stage's sockets take them."""
        result = answer_stage.run({"selector": {"query": question, **candidates},
                                   "finalizer": candidates})["finalizer"]["result"]
        return {**citation_recalls(result, gold), "situation": result.situation}

    rows, mismatches = [], 0
    for i, item in enumerate(items, start=1):
        question, gold = item["query"], item["gold"]
        rounds = logged[item["qid"]]["rounds"]
        best = best_round(rounds)
        evidence: dict[str, list[Document]] = {"rag": retrieve(retrieval, [question], top_k=10),
                                               "agentic": retrieve(retrieval, best["queries"], top_k=10)}
        for name, entry in (("rag", rounds[0]), ("agentic", best)):
            mismatches += [d.meta["key"] for d in evidence[name]] != entry["keys"][:10]
        row: dict[str, Any] = {"qid": item["qid"]}
        for variant in variants:
            source, situation = variant.split("/")
            docs = evidence[source]
            if not {d.meta["key"] for d in docs[:SEEN]} & set(gold):
                row[variant] = {"citation_recall": 0.0, "model_citation_recall": 0.0, "situation": "no gold seen"}
                continue
            if situation == "judged":
                evaluation = judge.run(query=question, documents=docs)["evaluation"]
                plan = {"round": 1, "queries": [question]}
                judged = RoundTracker().run(plan=plan, documents=docs, evaluation=evaluation)["rounds"]
                row[variant] = answer(question, gold, rounds=judged)
            else:
                row[variant] = answer(question, gold, documents=docs)
        rows.append(row)
        print(f"{i}/{len(items)} {json.dumps(row, ensure_ascii=False)}", flush=True)
    store.close()
    write_report(args, variants, rows, mismatches)


def write_report(args: argparse.Namespace, variants: list[str], rows: list[dict[str, Any]], mismatches: int) -> None:
    def mean(variant: str, metric: str) -> float:
        return statistics.mean(r[variant][metric] for r in rows)

    table = "\n".join(f"| {v} | {mean(v, 'model_citation_recall'):.3f} | {mean(v, 'citation_recall'):.3f} | "
                      f"{sum(r[v]['situation'] != 'no gold seen' for r in rows)} |" for v in variants)
    per_query = "\n".join(f"| {r['qid']} | " + " | ".join(
        f"{r[v]['model_citation_recall']:.2f} / {r[v]['citation_recall']:.2f} ({r[v]['situation']})" for v in variants)
        + " |" for r in rows)
    report = f"""# Answer prompt study: the model's own citations by answer situation

Command: `.venv/bin/python research/answer_prompt_study.py {' '.join(sys.argv[1:])}`
Queries: the {len(rows)} queries of `{args.log}` with an agentic row that retrieved (seed-{args.seed} sample of
`{Path(args.queries).name}`). Evidence re-retrieved from the logged queries; differed from the logged top 10 on
{mismatches} of {2 * len(rows)} lists. Answers at the pipeline's temperature (0.2).

| variant | model-written citation recall | with appended lists | queries answered (gold in the top {SEEN}) |
|---|---|---|---|
{table}

## Per query (model-written / with lists, situation)

| qid | {' | '.join(variants)} |
|---|{'---|' * len(variants)}
{per_query}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
