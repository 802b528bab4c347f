"""What should round 1 search for a long question (issue 48, item 2)? Decided on real long questions.

Until 2026-12-05 a question of at least ``LONG_QUESTION_CHARS`` (30) characters was rewritten before round 1: the
original plus the rewriter's variants and a keyword string, on every path (this study made the default 0: never).
That rule was adopted on the local LLM's retellings of STARD questions (its rewriter undoes its own retelling); here it
is measured on the STARD train questions of >= 30 characters, real people's wording. For each question the rewriter
(round-1 prompt, the local model, temperature 0) is called once (cached), and the hybrid top 100 of the bench store
(zero-shot e5-small) is scored for:

- ``as asked``: the question alone (what round 1 searches for a short question);
- ``rewrite (shipped)``: the question + variants + keywords, on every path;
- ``variants``: the question + variants, no keyword string;
- ``keywords for BM25``: BM25 searches the question + the keyword string, dense the question alone;
- ``rewrite for BM25``: BM25 searches everything the rewriter wrote, dense the question alone.

Nothing here is fitted, so no fold is needed: the rewriter and the retrieval are the shipped ones.

    .venv/bin/python research/long_question_round1_study.py [--limit 289] \\
        [--out research/reports/long_question_round1_study.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES
from components.generators.query_rewriter import QueryRewriter
from pipelines.retrieval import evidence_output, retrieval_inputs

LONG = 30
CACHE = bench_settings().data_dir / "study_cache" / "long_round1_rewrites.jsonl"
VARIANTS = ("as asked", "rewrite (shipped)", "variants", "keywords for BM25", "rewrite for BM25")


def searched(question: str, plan: dict) -> dict[str, dict[str, list[str]]]:
    """Per variant, the queries each path searches (the citation lookup follows BM25's)."""
    rewrite = plan.get("rewrite", {})
    queries = plan.get("queries") or [question]
    keywords = " ".join(rewrite.get("keywords") or [])
    variants = [q for q in queries if q != keywords]
    keyword_queries = [question, keywords] if keywords else [question]

    def paths(sparse: list[str], dense: list[str]) -> dict[str, list[str]]:
        return {"citation": sparse, "bm25": sparse, "dense": dense}

    return {"as asked": paths([question], [question]), "rewrite (shipped)": paths(queries, queries),
            "variants": paths(variants, variants), "keywords for BM25": paths(keyword_queries, [question]),
            "rewrite for BM25": paths(queries, [question])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--limit", type=int, default=289)
    parser.add_argument("--out", default="research/reports/long_question_round1_study.md")
    args = parser.parse_args()
    items = [q for q in load_queries(args.queries) if len(q["query"]) >= LONG][: args.limit]
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    plans = {}
    if CACHE.exists():
        plans = {r["qid"]: r["plan"] for r in map(json.loads, CACHE.read_text(encoding="utf-8").splitlines())}
    todo = [q for q in items if q["qid"] not in plans]
    if todo:
        rewriter = QueryRewriter(rewrite_first_round=True)
        rewriter.warm_up()
        with CACHE.open("a", encoding="utf-8") as out:
            for n, item in enumerate(todo, start=1):
                plans[item["qid"]] = rewriter.run(query=item["query"])["plan"]
                out.write(json.dumps({"qid": item["qid"], "plan": plans[item["qid"]]}, ensure_ascii=False) + "\n")
                out.flush()
                print(f"rewrite {n}/{len(todo)} {plans[item['qid']]['seconds']:.1f} s", flush=True)

    store, pipeline = bench_retrieval(bench_settings(), top_k=100)
    scores: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    started = time.perf_counter()
    for item in items:
        for name, by_path in searched(item["query"], plans[item["qid"]]).items():
            data = retrieval_inputs(pipeline, [item["query"]], top_k=100)
            for path, queries in by_path.items():
                data[path]["queries"] = queries
            docs = pipeline.run(data)[evidence_output(pipeline)]["documents"]
            scores[name].append(query_metrics([d.meta["key"] for d in docs], item["gold"]))
    store.close()
    fallbacks = sum(plans[q["qid"]].get("rewrite", {}).get("status") != "ok" for q in items)
    seconds = statistics.median(plans[q["qid"]]["seconds"] for q in items)
    lines = [f"| {name} | " + " | ".join(f"{statistics.mean(m[k] for m in scores[name]):.3f}"
                                         for k in ("R@1", "R@5", "R@10", "R@20", "R@100", "MRR@10")) + " |"
             for name in VARIANTS]
    wins = {name: (sum(a["R@10"] < b["R@10"] for a, b in zip(scores["as asked"], scores[name], strict=True)),
                   sum(a["R@10"] > b["R@10"] for a, b in zip(scores["as asked"], scores[name], strict=True)))
            for name in VARIANTS[1:]}
    report = f"""# Round 1 for long questions, on real long questions (issue 48)

Command: `.venv/bin/python research/long_question_round1_study.py {' '.join(sys.argv[1:])}`
{len(items)} STARD train questions of >= {LONG} characters (`{Path(args.queries).name}`); bench store (zero-shot
e5-small, all 23,995 articles), hybrid RRF (the question weighted {bench_settings().question_weight:g} against each
rewrite), top 100. Rewriter: the local model, round-1 prompt, temperature 0; median {seconds:.1f} s per call;
{fallbacks} of {len(items)} calls fell back to the question alone. Scoring took {time.perf_counter() - started:.0f} s.

| round 1 searches | R@1 | R@5 | R@10 | R@20 | R@100 | MRR@10 |
|---|---|---|---|---|---|---|
{chr(10).join(lines)}

Questions whose R@10 each variant raises / lowers against the question as asked:
{"; ".join(f"{name} {up} / {down}" for name, (up, down) in wins.items())}.
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
