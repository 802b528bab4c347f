"""Fusion study: how to combine the BM25 and dense rankings, measured on a query set (default STARD train).

Dumps each path's top-200 once (cached under DATA_DIR/bench_cache) and then scores fusion variants offline:
plain RRF, weighted RRF, different k, deeper candidate lists, and a law-level prior (articles of the laws that
dominate the fused list get a boost). Used to choose and justify the fusion settings in pipelines/retrieval.py;
the printout is summarised in benchmarks/reports/retrieval.md.

    .venv/bin/python research/fusion_study.py [--queries PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, mean_metrics, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES

DEPTH = 200
QUESTION_RE = re.compile(r"吗|呢|么|如何|怎样|怎么|是否|能否|可以|应该|什么|哪|多少|[?？]")


def dump_rankings(queries: list[dict], cache: Path) -> dict[str, list[list[tuple[str, str, float]]]]:
    if cache.exists():
        return json.loads(cache.read_text(encoding="utf-8"))
    from components.retrievers.dense_retriever import DenseRetriever
    from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
    from pipelines.embedders import text_embedder
    from pipelines.stores import open_document_store

    settings = bench_settings()
    store = open_document_store(settings)
    bm25 = JiebaBM25Retriever(document_store=store, top_k=DEPTH)
    dense = DenseRetriever(document_store=store, embedder=text_embedder(settings), top_k=DEPTH)
    dense.warm_up()
    out: dict[str, list] = {"bm25": [], "dense": []}
    for item in queries:
        for name, retriever in (("bm25", bm25), ("dense", dense)):
            docs = retriever.run(queries=[item["query"]])["documents"]
            out[name].append([(d.meta["key"], d.meta["law"], float(d.score)) for d in docs])
    store.close()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    return out


def fuse(lists: dict[str, list[tuple[str, str, float]]], weights: dict[str, float], k: int, depth: int,
         law_prior: float = 0.0, law_top: int = 20) -> list[str]:
    scores: dict[str, float] = defaultdict(float)
    law_of: dict[str, str] = {}
    for name, ranking in lists.items():
        for rank, (key, law, _) in enumerate(ranking[:depth], start=1):
            scores[key] += weights.get(name, 1.0) / (k + rank)
            law_of[key] = law
    if law_prior:
        head = sorted(scores, key=scores.get, reverse=True)[:law_top]
        law_mass: dict[str, float] = defaultdict(float)
        for key in head:
            law_mass[law_of[key]] += scores[key]
        top_mass = max(law_mass.values())
        for key in scores:
            scores[key] += law_prior * law_mass.get(law_of[key], 0.0) / top_mass * max(scores.values())
    return sorted(scores, key=scores.get, reverse=True)[:100]


def evaluate(queries, rankings, typed: dict[str, dict[str, float]] | None = None, **kwargs) -> dict[str, float]:
    """``typed``: per query type (keyword / descriptive) path weights that replace ``weights``."""
    rows = []
    for i, item in enumerate(queries):
        lists = {name: rankings[name][i] for name in rankings}
        if typed:
            kwargs["weights"] = typed[query_type(item["query"])]
        rows.append(query_metrics(fuse(lists, **kwargs), item["gold"]))
    m = mean_metrics(rows)
    return {k: round(m[k], 3) for k in ("R@1", "R@5", "R@10", "R@20", "R@100", "MRR@10", "nDCG@10")}


def query_type(query: str) -> str:
    """keyword-like (short, no question words) or descriptive (a natural-language question)."""
    return "keyword" if len(query) <= 12 and not QUESTION_RE.search(query) else "descriptive"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    args = parser.parse_args()
    queries = load_queries(args.queries)
    settings = bench_settings()
    cache = settings.data_dir / "bench_cache" / f"rankings_{Path(args.queries).stem}_{settings.embedding_backend}.json"
    rankings = dump_rankings(queries, cache)
    variants = [("bm25 only", {"weights": {"bm25": 1, "dense": 0}, "k": 60, "depth": 50}),
                ("dense only", {"weights": {"bm25": 0, "dense": 1}, "k": 60, "depth": 50})]
    for depth in (50, 100, 200):
        variants.append((f"RRF k=60 depth={depth}", {"weights": {}, "k": 60, "depth": depth}))
    for k in (10, 30, 100):
        variants.append((f"RRF k={k} depth=100", {"weights": {}, "k": k, "depth": 100}))
    for w in (1.2, 1.5, 2.0):
        variants.append((f"RRF dense weight {w}", {"weights": {"dense": w}, "k": 60, "depth": 100}))
    for prior in (0.1, 0.2, 0.3, 0.5):
        for top in (10, 20):
            variants.append((f"RRF + law prior {prior} top{top}",
                             {"weights": {}, "k": 60, "depth": 100, "law_prior": prior, "law_top": top}))
    for bm25_w, dense_w in ((1.5, 1.0), (1.0, 1.5)):
        typed = {"keyword": {"bm25": bm25_w, "dense": 1.0}, "descriptive": {"bm25": 1.0, "dense": dense_w}}
        variants.append((f"query-typed kw bm25 {bm25_w} desc dense {dense_w}",
                         {"typed": typed, "weights": {}, "k": 60, "depth": 100}))
    kinds = [query_type(q["query"]) for q in queries]
    print(f"query types: {kinds.count('keyword')} keyword-like, {kinds.count('descriptive')} descriptive")
    for name, kwargs in variants:
        print(f"{name:40s} {evaluate(queries, rankings, **kwargs)}", flush=True)


if __name__ == "__main__":
    main()
