"""Does the local LLM's yes/no reading of the best articles tell what the corpus cannot answer (issue 48, items 3–4)?

The trained signals (evidence scores, path agreement, the question's embedding or its character n-grams) separate
out-of-corpus questions from in-corpus ones at AUC 0.54–0.59 out of fold (`research/reports/out_of_corpus_study.md`).
This study asks whether the pair read by the LLM does better: each question's hybrid top ``--top`` of the bench
store (zero-shot e5-small, all articles; no trained model, so nothing saw these questions) is scored by
`LLMRelevanceRanker` (P(是), passages of ``--chars`` characters), and the question is summarised by the best
P(是), the mean of the best three, and the number of articles above 0.5.

Sets: a random sample of the out-of-corpus questions (seed 0) and a random sample of the in-corpus STARD train
questions (seed 0, the sample `round2_rerank_study.py` scored, re-scored here at the same settings so both sides
come from one run). Reports the AUC of each summary (out of corpus = positive, a low P(是) should flag it), and, for
the in-corpus questions, split by whether a gold article is in the scored top (good evidence).

    .venv/bin/python research/coverage_llm_study.py [--outside 60] [--inside 40] [--top 5] [--chars 160]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.judge_calibration import OUT_OF_CORPUS_QUERIES
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from pipelines.retrieval import retrieve

LONG = 30


def summaries(scores: list[float]) -> dict[str, float]:
    """What a question's scored top says: the best P(是), the mean of the best three, the count above 0.5."""
    best = sorted(scores, reverse=True)
    return {"best": best[0], "best3": statistics.mean(best[:3]), "above_half": float(sum(s > 0.5 for s in best))}


def auc(positive: list[float], negative: list[float]) -> float:
    """P(a positive scores below a negative): a low P(是) flags out of corpus (ties count half)."""
    pairs = [(p < n) + 0.5 * (p == n) for p in positive for n in negative]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def score_questions(questions: list[dict], kind: str, top: int, chars: int, checkpoint: Path) -> list[dict]:
    done = {}
    if checkpoint.exists():
        done = {(r["kind"], r["qid"]): r for r in map(json.loads, checkpoint.read_text(encoding="utf-8").splitlines())}
    todo = [q for q in questions if (kind, q["qid"]) not in done]
    if todo:
        settings = bench_settings()
        store, pipeline = bench_retrieval(settings, top_k=top)
        ranker = LLMRelevanceRanker(max_workers=1, max_chars=chars)
        ranker.warm_up()
        try:
            with checkpoint.open("a", encoding="utf-8") as out:
                for n, q in enumerate(todo, start=1):
                    docs = retrieve(pipeline, [q["query"]], top_k=top)
                    started = time.perf_counter()
                    record = {"kind": kind, "qid": q["qid"], "chars": len(q["query"]),
                              "keys": [d.meta["key"] for d in docs],
                              "scores": [ranker._score(q["query"], d) for d in docs],
                              "good": bool({d.meta["key"] for d in docs} & set(q["gold"])),
                              "seconds": time.perf_counter() - started}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    out.flush()
                    done[(kind, q["qid"])] = record
                    print(f"{kind} {n}/{len(todo)} best {max(record['scores']):.2f} {record['seconds']:.1f}s",
                          flush=True)
        finally:
            store.close()
    return [done[(kind, q["qid"])] for q in questions]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--outside", type=int, default=60, help="out-of-corpus questions sampled")
    parser.add_argument("--inside", type=int, default=40, help="in-corpus questions sampled")
    parser.add_argument("--top", type=int, default=5, help="hybrid ranks scored per question")
    parser.add_argument("--chars", type=int, default=160, help="characters of each passage shown to the LLM")
    parser.add_argument("--out", default="research/reports/coverage_llm_study.md")
    args = parser.parse_args()
    outside_all, inside_all = load_queries(OUT_OF_CORPUS_QUERIES), load_queries(DEFAULT_QUERIES)
    outside = random.Random(0).sample(outside_all, min(args.outside, len(outside_all)))
    inside = random.Random(0).sample(inside_all, min(args.inside, len(inside_all)))
    checkpoint = bench_settings().data_dir / "study_cache" / f"coverage_llm_{args.top}_{args.chars}.jsonl"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    out_rows = score_questions(outside, "outside", args.top, args.chars, checkpoint)
    in_rows = score_questions(inside, "inside", args.top, args.chars, checkpoint)
    groups = {
        "all in-corpus": in_rows,
        "in-corpus, gold in the scored top": [r for r in in_rows if r["good"]],
        "in-corpus, gold not in it": [r for r in in_rows if not r["good"]],
        f"in-corpus, long (≥ {LONG})": [r for r in in_rows if r["chars"] >= LONG],
    }
    out_long = [r for r in out_rows if r["chars"] >= LONG]
    lines = []
    for measure in ("best", "best3", "above_half"):
        outside_values = [summaries(r["scores"])[measure] for r in out_rows]
        cells = [f"{statistics.mean(outside_values):.3f}"]
        for rows in groups.values():
            values = [summaries(r["scores"])[measure] for r in rows]
            cells.append(f"{statistics.mean(values):.3f} / {auc(outside_values, values):.3f}" if rows else "–")
        lines.append(f"| {measure} | " + " | ".join(cells) + " |")
    seconds = [r["seconds"] for r in out_rows + in_rows]
    header = " | ".join(f"{name} ({len(rows)}): mean / AUC" for name, rows in groups.items())
    report = f"""# The LLM's yes/no reading of the best articles as a coverage signal (issue 48)

Command: `.venv/bin/python research/coverage_llm_study.py {' '.join(sys.argv[1:])}`
{len(out_rows)} out-of-corpus questions (`{OUT_OF_CORPUS_QUERIES.name}`, random, seed 0; {len(out_long)} of ≥ {LONG}
characters) against {len(in_rows)} in-corpus STARD train questions (random, seed 0). Bench store (zero-shot
e5-small, all articles), hybrid top {args.top} of the question as asked, each article scored by the embedded LLM's
yes/no prompt (`LLMRelevanceRanker`, {args.chars} characters per passage). AUC: the chance that an out-of-corpus
question's summary is lower than an in-corpus one's (0.5 = no signal). Machine: {os.cpu_count()} cores,
{statistics.median(seconds):.1f} s per question (median, {args.top} calls).

| summary | out of corpus: mean | {header} |
|---|---|{"---|" * len(groups)}
{chr(10).join(lines)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
