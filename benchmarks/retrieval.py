"""Retrieval benchmark on STARD: BM25, dense, hybrid RRF and hybrid + rerank over all current articles.

Reuses the store built by benchmarks/indexing.py (``DATA_DIR/corpus_qdrant``, collection ``statutes_all``) and
indexes whatever is missing first (and reweights BM25 where the stored weights are out of date). Writes a
Markdown report. The store is the embedded Qdrant Edge store (a store made by qdrant-client's local mode is
migrated on first open), or the server ``QDRANT_URL`` names.

    .venv/bin/python benchmarks/retrieval.py [--queries PATH] [--out PATH] [--rerank-sample N] [--limit N]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.folds import FOLDS, fold_assignment, fold_models, fold_questions, stard_pairs
from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, mean_metrics, percentile, query_metrics
from components.rankers.evaluator_ranker import EvaluatorRanker
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from config.settings import Settings
from helpers.statutes.labels import key_law
from pipelines.indexing import Indexer, law_sources
from pipelines.retrieval import CANDIDATES_PER_PATH, build_retrieval_pipeline, retrieve
from pipelines.stores import open_document_store
from provisioning.train import corpus_settings

DEFAULT_QUERIES = Path(__file__).resolve().parents[1] / "training_data" / "stard" / "stard_train_with_criminal.jsonl"
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


CRIMINAL_LAW = "中华人民共和国刑法"


def is_criminal(item: dict) -> bool:
    """A question whose gold includes an article of the 刑法 (the 59 the 891-question file added)."""
    return any(key_law(key) == CRIMINAL_LAW for key in item["gold"])


def criminal_row(name: str, queries: list[dict], rankings: list[list[str]]) -> str | None:
    """The row of ``name`` over the questions that need the 刑法, or None when there are none."""
    chosen = [query_metrics(keys, item["gold"]) for item, keys in zip(queries, rankings, strict=True)
              if is_criminal(item)]
    if not chosen:
        return None
    metrics = mean_metrics(chosen)
    cells = " | ".join(f"{metrics[c]:.3f}" for c in COLUMNS)
    return f"| {name}, 刑法 questions | {len(chosen)} | {cells} | – | – |"


def row(name: str, metrics: dict[str, float], latencies: list[float], n: int) -> str:
    cells = " | ".join(f"{metrics[c]:.3f}" for c in COLUMNS)
    return f"| {name} | {n} | {cells} | {percentile(latencies, 50):.1f} | {percentile(latencies, 95):.1f} |"


def cross_validated(settings: Settings, queries_file: str, limit: int, weights: str) -> str:
    """Each fold's questions through the store of the embedder trained on the other folds (and reranked by that
    fold's evaluator): the shipped recipe measured out of sample, with the BM25 fusion weight compared."""
    pairs = stard_pairs(queries_file)
    items = load_queries(queries_file)
    grid = [float(w) for w in weights.split(",")]
    systems = ["dense"] + [f"hybrid, BM25 weight {w:g}" for w in grid] + [
        f"hybrid (BM25 weight {settings.bm25_weight:g}) + evaluator rerank top 20"]
    keys: dict[str, dict[int, list[str]]] = {name: {} for name in systems}
    latency: dict[str, list[float]] = {name: [] for name in systems}
    fold_of = fold_assignment(len(pairs))
    for fold in range(FOLDS):
        trained = fold_models(settings, pairs, fold)
        fold_settings = corpus_settings(trained.settings)
        store = open_document_store(fold_settings)
        ids = [i for i in fold_questions(pairs, fold) if not limit or i < limit]
        pipelines = {"dense": build_retrieval_pipeline(store, fold_settings, mode="dense", top_k=100)}
        for w, name in zip(grid, systems[1:-1], strict=True):
            pipelines[name] = build_retrieval_pipeline(store, dataclasses.replace(fold_settings, bm25_weight=w),
                                                       mode="hybrid", top_k=100)
        pipelines[systems[-1]] = build_retrieval_pipeline(
            store, fold_settings, mode="hybrid", top_k=100,
            reranker=EvaluatorRanker(model=str(trained.model), top_n=20))
        for name, pipeline in pipelines.items():
            pipeline.warm_up()
            retrieve(pipeline, ["预热"], top_k=100)
            _, times, ranked = evaluate(pipeline, [items[i] for i in ids])
            keys[name].update(zip(ids, ranked, strict=True))
            latency[name] += times
        store.close()
        print(f"fold {fold}: {len(ids)} questions", flush=True)
    header = ("| system (out of fold) | queries | R@10 | MRR@10 | R@100 | R@10 per fold | MRR@10 per fold | p50 ms |\n"
              "|---|---|---|---|---|---|---|---|")
    lines = []
    for name in systems:
        per_question = {i: query_metrics(k, items[i]["gold"]) for i, k in keys[name].items()}
        pooled = mean_metrics(list(per_question.values()))
        per_fold = [mean_metrics([m for i, m in per_question.items() if fold_of[i] == f]) for f in range(FOLDS)]
        spread = {c: f"{statistics.mean(m[c] for m in per_fold):.3f} ± {statistics.stdev(m[c] for m in per_fold):.3f}"
                  for c in ("R@10", "MRR@10")}
        lines.append(f"| {name} | {len(per_question)} | {pooled['R@10']:.3f} | {pooled['MRR@10']:.3f} | "
                     f"{pooled['R@100']:.3f} | {spread['R@10']} | {spread['MRR@10']} | "
                     f"{percentile(latency[name], 50):.1f} |")
        criminal = [m for i, m in per_question.items() if is_criminal(items[i])]
        if criminal:
            sub = mean_metrics(criminal)
            lines.append(f"| {name}, 刑法 questions | {len(criminal)} | {sub['R@10']:.3f} | {sub['MRR@10']:.3f} | "
                         f"{sub['R@100']:.3f} | – | – | – |")
    return f"""For fold k, `python -m pipelines train`'s recipe ran on the other four folds (embedder fine-tuned on \
80 % of
their questions, evaluator trained on the other 20 %), the corpus was indexed with that embedder, and fold k's
questions were searched through it. No question is searched by an embedder that saw it. Pooled over the folds;
per fold mean ± standard deviation. The reranker row uses the configured BM25 weight ({settings.bm25_weight:g}).

{header}
{chr(10).join(lines)}
"""


def store_kind(store) -> str:
    return "a Qdrant server" if getattr(store, "url", None) else "the embedded Qdrant Edge store"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--out", default="benchmarks/reports/retrieval.md")
    parser.add_argument("--rerank-sample", type=int, default=100, help="queries for hybrid + LLM rerank (0 = skip)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries (0 = all)")
    parser.add_argument("--folds", type=int, default=5, help="cross-validate the trained models (0 = skip)")
    parser.add_argument("--weights", default="1,0.75,0.5,0.35,0.25", help="BM25 RRF weights compared (dense: 1)")
    args = parser.parse_args()
    queries = load_queries(args.queries)
    if args.limit:
        queries = queries[: args.limit]
    settings = bench_settings()

    store = open_document_store(settings)
    sources = law_sources(["all"])
    indexer = Indexer(store, settings)
    indexer.index(sources)  # incremental: adds what is missing (the 刑法 to an older store), relabels, resumes
    indexer.reweight()  # a store written before BM25 weights were stored, or whose average length drifted
    print(f"store: {store.count_documents()} documents")

    lines = []
    other_weights = [float(w) for w in args.weights.split(",") if float(w) != settings.bm25_weight]
    systems = [("bm25", "bm25", settings), ("dense", "dense", settings),
               (f"hybrid (BM25 weight {settings.bm25_weight:g})", "hybrid", settings)] + [
        (f"hybrid, BM25 weight {w:g}", "hybrid", dataclasses.replace(settings, bm25_weight=w)) for w in other_weights]
    for name, mode, system_settings in systems:
        pipeline = build_retrieval_pipeline(store, system_settings, mode=mode, top_k=100)
        pipeline.warm_up()
        retrieve(pipeline, ["预热"], top_k=100)  # first-query costs (jieba dictionary, model load) not timed
        metrics, latencies, ranked = evaluate(pipeline, queries)
        lines.append(row(name, metrics, latencies, len(queries)))
        if (criminal := criminal_row(name, queries, ranked)) is not None:
            lines.append(criminal)
        print(lines[-1], flush=True)

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
    cv_part = cross_validated(settings, args.queries, args.limit, args.weights) if args.folds else "not run"

    header = "| system | queries | " + " | ".join(COLUMNS) + " | p50 ms | p95 ms |\n|" + "---|" * (len(COLUMNS) + 4)
    report = f"""# Retrieval benchmark (STARD)

Command: `.venv/bin/python benchmarks/retrieval.py {' '.join(sys.argv[1:])}`
Queries: `{Path(args.queries).name}` ({len(queries)}; rows "刑法 questions" are those whose gold needs the 刑法);
corpus: every article in force of laws.db (the 刑法 included), indexed by benchmarks/indexing.py into \
{store_kind(store)}. Embedding model `{settings.embedding_model}` (zero-shot: no model in this first table saw
these questions), backend `{settings.embedding_backend}`.
Machine: {os.cpu_count()} cores, Python {platform.python_version()}. Latency is per query, end to end through the
Haystack retrieval pipeline (query encoding included), after one warm-up query.
RRF: k = 60, ranks start at 1; each path contributes its top {CANDIDATES_PER_PATH} candidates; dense weight 1.

{header}
{chr(10).join(lines)}

## Reranking (fixed random sample, seed 0)

{header if rerank_lines else 'not run'}
{chr(10).join(rerank_lines)}

## The adapted embedder and the evaluator reranker, 5-fold cross-validation

{cv_part}
"""
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
