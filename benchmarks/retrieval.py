"""Retrieval benchmark on STARD: BM25, dense, hybrid RRF and hybrid + rerank over all current articles.

Reuses the store built by benchmarks/indexing.py (``DATA_DIR/corpus_qdrant``, collection ``statutes_all``) and
indexes whatever is missing first. Writes a Markdown report.

    .venv/bin/python benchmarks/retrieval.py [--queries PATH] [--out PATH] [--rerank-sample N] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, mean_metrics, percentile, query_metrics
from components.llm_relevance_ranker import LLMRelevanceRanker
from document_store.qdrant_store import open_document_store
from document_store.source_manifest import SourceManifest
from pipelines.indexing import Indexer, law_sources
from pipelines.retrieval import build_retrieval_pipeline, retrieve

DEFAULT_QUERIES = Path(__file__).resolve().parents[1] / "training_data" / "stard" / "stard_train.jsonl"
COLUMNS = ["R@1", "R@3", "R@5", "R@10", "R@20", "R@100", "Hit@1", "Hit@3", "Hit@10", "MRR@10", "nDCG@10"]


def evaluate(pipeline, queries: list[dict], top_k: int = 100) -> tuple[dict[str, float], list[float], list[list[str]]]:
    rows, latencies, rankings = [], [], []
    for item in queries:
        started = time.perf_counter()
        docs = retrieve(pipeline, [item["query"]], top_k=top_k)
        latencies.append(1000 * (time.perf_counter() - started))
        keys = [d.meta["key"] for d in docs]
        rankings.append(keys)
        rows.append(query_metrics(keys, item["gold"]))
    return mean_metrics(rows), latencies, rankings


def row(name: str, metrics: dict[str, float], latencies: list[float], n: int) -> str:
    cells = " | ".join(f"{metrics[c]:.3f}" for c in COLUMNS)
    return f"| {name} | {n} | {cells} | {percentile(latencies, 50):.1f} | {percentile(latencies, 95):.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--out", default="benchmarks/reports/retrieval.md")
    parser.add_argument("--rerank-sample", type=int, default=100, help="queries for hybrid + LLM rerank (0 = skip)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries (0 = all)")
    args = parser.parse_args()
    queries = load_queries(args.queries)
    if args.limit:
        queries = queries[: args.limit]
    settings = bench_settings()

    store = open_document_store(settings)
    manifest = SourceManifest(store)
    sources = law_sources(["all"])
    if manifest.incomplete() or len(manifest.all()) < len(sources):
        Indexer(store, settings).index(sources)
    print(f"store: {store.count_documents()} documents")

    lines, results = [], {}
    for mode in ("bm25", "dense", "hybrid"):
        pipeline = build_retrieval_pipeline(store, settings, mode=mode, top_k=100)
        pipeline.warm_up()
        retrieve(pipeline, ["预热"], top_k=100)  # first-query costs (jieba dictionary, mirror load) not timed
        metrics, latencies, _ = evaluate(pipeline, queries)
        results[mode] = metrics
        lines.append(row(mode, metrics, latencies, len(queries)))
        print(lines[-1])

    rerank_lines = []
    if args.rerank_sample:
        sample = random.Random(0).sample(queries, min(args.rerank_sample, len(queries)))
        ranker = LLMRelevanceRanker(top_n=settings.rerank_top_n, max_workers=1)
        ranker.warm_up()
        for name, reranker in (("hybrid (same sample)", None), (f"hybrid + LLM rerank top {ranker.top_n}", ranker)):
            pipeline = build_retrieval_pipeline(store, settings, mode="hybrid", top_k=100, reranker=reranker)
            pipeline.warm_up()
            metrics, latencies, _ = evaluate(pipeline, sample)
            rerank_lines.append(row(name, metrics, latencies, len(sample)))
            print(rerank_lines[-1])
    store.close()

    header = "| system | queries | " + " | ".join(COLUMNS) + " | p50 ms | p95 ms |\n|" + "---|" * (len(COLUMNS) + 4)
    report = f"""# Retrieval benchmark (STARD)

Command: `.venv/bin/python benchmarks/retrieval.py {' '.join(sys.argv[1:])}`
Queries: `{Path(args.queries).name}` ({len(queries)}); corpus: every current article of laws.db, indexed by
benchmarks/indexing.py. Embedding model `{settings.embedding_model}`, backend `{settings.embedding_backend}`.
Machine: {os.cpu_count()} cores, Python {platform.python_version()}. Latency is per query, end to end through the
Haystack retrieval pipeline (query encoding included), after one warm-up query.
RRF: k = 60, ranks start at 1; each path contributes its top max(50, k) candidates.

{header}
{chr(10).join(lines)}

## Reranking (fixed random sample, seed 0)

{header if rerank_lines else 'not run'}
{chr(10).join(rerank_lines)}
"""
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
