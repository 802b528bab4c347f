"""Round 2 reranks deeper instead of re-searching (issue 47, item 2): what the local LLM's yes/no reranker gains over
the hybrid order, at what cost, on which pool.

For a fixed random sample of STARD train questions (seed 0) round 1 is the hybrid top 50 of the bench store
(zero-shot e5-small: no model here saw these questions; the LLM is not trained). Each (question, article) pair is
scored once per passage length by `LLMRelevanceRanker` (one call, P(是)), with its seconds. Orders compared:

- the hybrid order;
- the LLM over the hybrid top 20 (today's ``RERANKER=llm``), passages of 400 and of ``--short`` characters;
- the LLM over a deeper pool: the hybrid top ``--depth`` plus the neighbours (±2, same law) of the top 3;
- each LLM order fused with the hybrid order by RRF (the LLM alone throws the first stage's evidence away).

Rows: all questions, long (≥ 30 characters) and short ones, and those round 1 missed (no gold in the hybrid top
10: what a second round is for). Seconds are per question, summed over its calls (the server answers one by one).

    .venv/bin/python research/round2_rerank_study.py [--sample 40] [--short 160] [--depth 30]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from haystack import Document

from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries, mean_metrics, query_metrics, rrf
from benchmarks.retrieval import DEFAULT_QUERIES
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from components.retrievers.store_search import StoreSearch
from helpers.statutes.neighbours import neighbour_keys
from pipelines.retrieval import retrieve

LONG = 30
COLUMNS = ["R@1", "R@5", "R@10", "MRR@10", "nDCG@10"]


def deep_pool(search: StoreSearch, hybrid: list[Document], depth: int) -> list[Document]:
    """The hybrid top ``depth`` and the neighbours (±2, same law) of its top 3 (not the articles they refer to,
    which the product's `RoundRanker` adds too)."""
    pool = {d.meta["key"]: d for d in hybrid[:depth]}
    neighbours = [key for d in hybrid[:3] for key in neighbour_keys(d.meta["key"], span=2)]
    for doc in search.articles([k for k in neighbours if k not in pool]):
        pool.setdefault(doc.meta["key"], doc)
    return list(pool.values())


def llm_order(keys: list[str], scores: dict[str, float]) -> list[str]:
    return sorted(keys, key=lambda k: (-scores[k], keys.index(k)))


def scored(ranker: LLMRelevanceRanker, query: str, docs: list[Document], cache: dict, chars: int) -> float:
    """Score the docs not yet in ``cache`` at passage length ``chars``; the seconds spent."""
    ranker.max_chars = chars
    started = time.perf_counter()
    for doc in docs:
        if (chars, doc.meta["key"]) not in cache:
            cache[(chars, doc.meta["key"])] = ranker._score(query, doc)
    return time.perf_counter() - started


def missed_by_round_one(queries: list[dict]) -> list[dict]:
    """The questions none of whose gold articles is in the hybrid top 10."""
    store, pipeline = bench_retrieval(bench_settings(), top_k=10)
    try:
        return [q for q in queries if not {d.meta["key"] for d in retrieve(pipeline, [q["query"]])} & set(q["gold"])]
    finally:
        store.close()


def study(queries: list[dict], short: int, depth: int, checkpoint: Path,
          compare_long: bool) -> tuple[dict, dict]:
    settings = bench_settings()
    store, pipeline = bench_retrieval(settings, top_k=50)
    search = StoreSearch(store)
    ranker = LLMRelevanceRanker(max_workers=1)
    ranker.warm_up()
    done = {}
    if checkpoint.exists():
        done = {r["qid"]: r for r in map(json.loads, checkpoint.read_text(encoding="utf-8").splitlines())}
    rows: dict[str, list[dict]] = {}
    seconds: dict[str, list[float]] = {}
    with checkpoint.open("a", encoding="utf-8") as out:
        for n, q in enumerate(queries, start=1):
            if str(q["qid"]) in done:
                record = done[str(q["qid"])]
            else:
                hybrid = retrieve(pipeline, [q["query"]], top_k=50)
                pool = deep_pool(search, hybrid, depth)
                cache: dict = {}
                record = {
                    "qid": str(q["qid"]), "hybrid": [d.meta["key"] for d in hybrid],
                    "pool": [d.meta["key"] for d in pool],
                    "seconds_400": scored(ranker, q["query"], hybrid[:20], cache, 400) if compare_long else 0.0,
                    "seconds_short_20": scored(ranker, q["query"], hybrid[:20], cache, short),
                }
                record["seconds_short_deep"] = record["seconds_short_20"] + scored(ranker, q["query"], pool, cache,
                                                                                   short)
                record["scores"] = {f"{c}|{k}": s for (c, k), s in cache.items()}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
            score = {tuple(k.split("|", 1)): v for k, v in record["scores"].items()}
            s400 = {k: v for (c, k), v in score.items() if c == "400"}
            sshort = {k: v for (c, k), v in score.items() if c == str(short)}
            hybrid, pool = record["hybrid"], record["pool"]
            tail = [k for k in hybrid if k not in pool]
            orders = {
                "hybrid": hybrid,
                f"LLM top 20, {short} chars": llm_order(hybrid[:20], sshort) + hybrid[20:],
                f"LLM deep pool, {short} chars": llm_order(pool, sshort) + tail,
                f"RRF(hybrid, LLM top 20 {short})": rrf(hybrid, llm_order(hybrid[:20], sshort)),
                f"RRF(hybrid, LLM deep {short})": rrf(hybrid, llm_order(pool, sshort)),
            }
            if s400:
                orders["LLM top 20, 400 chars"] = llm_order(hybrid[:20], s400) + hybrid[20:]
                orders["RRF(hybrid, LLM top 20 400)"] = rrf(hybrid, llm_order(hybrid[:20], s400))
            gold = q["gold"]
            missed = not set(hybrid[:10]) & set(gold)
            slices = ["all", "long" if len(q["query"]) >= LONG else "short", *(["round 1 missed"] if missed else [])]
            for name, order in orders.items():
                metrics = query_metrics(order, gold)
                metrics["pool recall"] = query_metrics(pool if "deep" in name else hybrid[:20], gold)["R@100"]
                for part in slices:
                    rows.setdefault(f"{part}|{name}", []).append(metrics)
            for name in ("seconds_400", "seconds_short_20", "seconds_short_deep")[0 if compare_long else 1:]:
                seconds.setdefault(name, []).append(record[name])
            print(f"{n}/{len(queries)} {record['seconds_short_deep']:.1f}s", flush=True)
    store.close()
    return {k: mean_metrics(v) | {"n": len(v)} for k, v in rows.items()}, seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--short", type=int, default=160, help="characters of a passage in the cheap prompt")
    parser.add_argument("--depth", type=int, default=30, help="hybrid ranks in round 2's pool")
    parser.add_argument("--missed", action="store_true",
                        help="sample among the questions whose gold the hybrid top 10 misses (what round 2 is for)")
    parser.add_argument("--compare-long", action="store_true", help="also score the top 20 with 400 characters")
    parser.add_argument("--out", default="research/reports/round2_rerank_study.md")
    args = parser.parse_args()
    queries = load_queries(DEFAULT_QUERIES)
    if args.missed:
        queries = missed_by_round_one(queries)
    queries = random.Random(0).sample(queries, min(args.sample, len(queries)))
    name = f"round2_rerank_{args.short}_{args.depth}{'_missed' if args.missed else ''}.jsonl"
    checkpoint = bench_settings().data_dir / "study_cache" / name
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    results, seconds = study(queries, args.short, args.depth, checkpoint, args.compare_long)
    lines = ["| questions | order | n | " + " | ".join(COLUMNS) + " | pool recall |", "|" + "---|" * (len(COLUMNS) + 4)]
    for key, metrics in results.items():
        part, name = key.split("|", 1)
        lines.append(f"| {part} | {name} | {metrics['n']} | " + " | ".join(f"{metrics[c]:.3f}" for c in COLUMNS)
                     + f" | {metrics['pool recall']:.3f} |")
    cost = "\n".join(f"- {name}: median {sorted(v)[len(v) // 2]:.1f} s, mean {sum(v) / len(v):.1f} s per question"
                     for name, v in seconds.items())
    Path(args.out).write_text(f"""# Round 2 reranks deeper: the local LLM's yes/no reranker over the hybrid pool

Command: `.venv/bin/python research/round2_rerank_study.py {' '.join(sys.argv[1:])}`
{len(queries)} STARD train questions (random, seed 0\
{", among those whose gold the hybrid top 10 misses" if args.missed else ""}), \
bench store (zero-shot e5-small, all articles), hybrid RRF top
50; the deep pool is the hybrid top {args.depth} plus the neighbours (±2, same law) of the top 3. "pool recall":
the gold share inside what the LLM scored (the top 20, or the deep pool). Machine: {os.cpu_count()} cores.

{chr(10).join(lines)}

Seconds per question (the embedded LLM; each call scores one passage; the short prompt's deep pool includes its
top 20):

{cost}
""", encoding="utf-8")
    print(Path(args.out).read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
