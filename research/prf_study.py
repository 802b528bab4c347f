"""Pseudo-relevance feedback (PRF) study: does feeding the first-pass hybrid top-m back into the query help?

No LLM, no per-query tuning. The first pass is the production hybrid (citation lookup + BM25 + dense, RRF with
k = 60, ranks from 1, 100 candidates per path). From its top-m articles:

- dense Rocchio: ``q' = normalise(q + β · mean(embeddings of the top-m))``, dense search again with ``q'``;
- BM25 RM3-style: the ``n`` terms with the highest ``Σ_d tf(t, d)/|d| · idf(t)`` over the top-m (query terms
  excluded; stopwords never reach the index) are added with a total weight of ``α ×`` the original query's
  (each expansion term's share proportional to its feedback weight), BM25 search again with the weighted query;
- both together.

The second-pass rankings replace the first-pass ones of their path (or, in the "extra path" rows, join them as
further RRF paths) and are RRF-fused exactly like the first pass. Each row reports the paired difference to the
baseline (bootstrap 95 % interval, queries won / lost). Scoring runs over the store's matrices held in memory
(`research.store_snapshot`); the project code is not changed. Query embeddings are computed once. The extra latency is
the time from the first-pass fused list to the second-pass fused list (expansion, second search(es), fusion), per query.

The store is opened from a copy (the original may be locked by a running process)::

    cp -r data/corpus_qdrant /tmp/prf_qdrant
    .venv/bin/python research/prf_study.py [--qdrant-path /tmp/prf_qdrant] [--queries PATH] [--out PATH]

The discussion of the results is research/reports/prf_study.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, mean_metrics, percentile, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES
from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder
from components.retrievers.citation_lookup import CitationLookup
from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
from helpers.text_encoding.jieba_tokenizer import term_id
from pipelines.embedders import text_embedder
from pipelines.retrieval import CANDIDATES_PER_PATH, PATH_WEIGHTS
from pipelines.stores import open_document_store
from research.store_snapshot import Snapshot, snapshot

RRF_K = 60
COLUMNS = ["R@1", "R@5", "R@10", "R@100", "MRR@10", "nDCG@10"]
DENSE_GRID = [(beta, m) for m in (3, 5) for beta in (0.3, 0.5, 1.0)]
BM25_GRID = [(alpha, n, m) for m in (3, 5) for n in (10, 20) for alpha in (0.3, 0.5)]


@dataclasses.dataclass
class Query:
    gold: list[str]
    terms: dict[int, float]  # matrix column -> weight (term count in the query)
    embedding: np.ndarray
    citation: list[str]  # keys found by the exact-citation lookup


class Engine:
    """BM25 with weighted query terms and dense search over the store's matrices, returning row indices."""

    def __init__(self, snap: Snapshot) -> None:
        self.columns = snap.bm25.columns
        self.idf = snap.bm25.idf
        self.weights = snap.bm25.weights  # documents × terms, csc: the stored BM25 document weights
        self.tf = self._term_frequencies(snap)
        self.lengths = np.asarray(self.tf.sum(axis=1)).ravel()
        self.dense_matrix = snap.dense
        self.keys = [str(d.meta.get("key") or d.id) for d in snap.documents]
        self.row_of: dict[str, int] = {}
        for row, key in enumerate(self.keys):
            self.row_of.setdefault(key, row)

    def _term_frequencies(self, snap: Snapshot) -> sparse.csr_matrix:
        """Raw term counts for RM3, re-tokenised as indexing does (the store holds BM25 weights, not counts)."""
        encoder = JiebaBM25DocumentEncoder()
        rows, cols, values = [], [], []
        for row, doc in enumerate(snap.documents):
            for term, count in encoder.term_counts(doc).items():
                if term in self.columns:
                    rows.append(row)
                    cols.append(self.columns[term])
                    values.append(float(count))
        return sparse.csr_matrix((values, (rows, cols)), shape=self.weights.shape)

    def query_terms(self, terms: list[str]) -> dict[int, float]:
        counts = Counter(self.columns.get(term_id(t)) for t in terms)
        counts.pop(None, None)
        return {col: float(c) for col, c in counts.items()}

    def bm25(self, terms: dict[int, float], top_k: int = CANDIDATES_PER_PATH) -> list[str]:
        if not terms:
            return []
        cols = list(terms)
        query = self.idf[cols] * np.asarray([terms[c] for c in cols], dtype=np.float32)
        scores = np.asarray(self.weights[:, cols] @ query).ravel()
        return self._top(scores, np.flatnonzero(scores > 0), top_k)

    def dense(self, embedding: np.ndarray, top_k: int = CANDIDATES_PER_PATH) -> list[str]:
        scores = self.dense_matrix @ (embedding / (np.linalg.norm(embedding) or 1.0))
        return self._top(scores, np.arange(len(self.keys)), top_k)

    def _top(self, scores: np.ndarray, candidates: np.ndarray, top_k: int) -> list[str]:
        """Argpartition to top_k, then a stable sort by score (as the removed in-process mirror ranked)."""
        if candidates.size > top_k:
            candidates = candidates[np.argpartition(-scores[candidates], top_k)[:top_k]]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        return [self.keys[row] for row in order]

    def rocchio(self, embedding: np.ndarray, feedback: list[str], beta: float) -> np.ndarray:
        rows = [self.row_of[key] for key in feedback]
        query = embedding + beta * self.dense_matrix[rows].mean(axis=0)
        return query / np.linalg.norm(query)

    def rm3(self, terms: dict[int, float], feedback: list[str], alpha: float, n: int) -> dict[int, float]:
        rows = [self.row_of[key] for key in feedback]
        sub = self.tf[rows]
        relative = sub.multiply(1.0 / np.maximum(self.lengths[rows], 1.0)[:, None]).tocsr()
        mass = np.asarray(relative.sum(axis=0)).ravel() / len(rows)
        cols = np.flatnonzero(mass)
        cols = cols[~np.isin(cols, list(terms))]
        if not cols.size:
            return dict(terms)
        score = mass[cols] * self.idf[cols]
        best = np.argsort(-score, kind="stable")[:n]
        total = float(score[best].sum())
        query_mass = sum(terms.values())
        expanded = dict(terms)
        for i in best:
            expanded[int(cols[i])] = alpha * query_mass * float(score[i]) / total
        return expanded


def rrf(rankings: list[tuple[str, list[str]]], top_k: int = 100) -> list[str]:
    """`RRFJoiner` on key lists: Σ weight/(k + rank), ranks from 1; ties by best rank, then first seen."""
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for path, keys in rankings:
        weight = PATH_WEIGHTS.get(path, 1.0)
        for rank, key in enumerate(keys, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank)
            best[key] = min(best.get(key, rank), rank)
    return sorted(scores, key=lambda key: (-scores[key], best[key]))[:top_k]


def run_config(engine: Engine, queries: list[Query], first: list[dict], dense_prf=None, bm25_prf=None,
               add: bool = False) -> tuple[list[dict[str, float]], list[float]]:
    """Per-query metrics and extra latency (ms) of one configuration; ``None`` settings keep the first pass.

    ``add``: the second-pass rankings join the first-pass ones as extra RRF paths instead of replacing them.
    """
    rows, extra = [], []
    for query, base in zip(queries, first, strict=True):
        started = time.perf_counter()
        rankings = [("citation", query.citation), ("bm25", base["bm25"]), ("dense", base["dense"])]
        if dense_prf:
            beta, m = dense_prf
            second = engine.dense(engine.rocchio(query.embedding, base["fused"][:m], beta))
            rankings = [*rankings, ("dense_prf", second)] if add else [*rankings[:2], ("dense", second)]
        if bm25_prf:
            alpha, n, m = bm25_prf
            second = engine.bm25(engine.rm3(query.terms, base["fused"][:m], alpha, n))
            rankings = [*rankings, ("bm25_prf", second)] if add else [r if r[0] != "bm25" else ("bm25", second)
                                                                     for r in rankings]
        fused = rrf(rankings) if dense_prf or bm25_prf else base["fused"]
        extra.append(1000 * (time.perf_counter() - started))
        rows.append(query_metrics(fused, query.gold))
    return rows, extra


def paired_delta(rows: list[dict[str, float]], base: list[dict[str, float]], metric: str,
                 samples: int = 2000) -> tuple[float, float, float, int, int]:
    """Mean difference to the baseline, its 95 % paired-bootstrap interval (seed 0), queries won and lost."""
    delta = np.asarray([r[metric] - b[metric] for r, b in zip(rows, base, strict=True)])
    rng = np.random.default_rng(0)
    means = delta[rng.integers(0, len(delta), size=(samples, len(delta)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(delta.mean()), float(low), float(high), int((delta > 0).sum()), int((delta < 0).sum())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--qdrant-path", default="/tmp/prf_qdrant", help="a copy of DATA_DIR/corpus_qdrant")
    parser.add_argument("--out", default="/tmp/prf_study_table.md", help="where the results table is written")
    args = parser.parse_args()
    settings = dataclasses.replace(bench_settings(), qdrant_path=Path(args.qdrant_path))
    store = open_document_store(settings, settings.collection)
    engine = Engine(snapshot(store))
    tokenizer = JiebaBM25Retriever(document_store=store)
    citation = CitationLookup(document_store=store)
    embedder = text_embedder(settings)
    embedder.warm_up()
    items = load_queries(args.queries)
    print(f"{len(engine.keys)} articles, {len(items)} queries; encoding queries ...", flush=True)

    queries, first, first_ms = [], [], []
    for item in items:
        embedding = np.asarray(embedder.run(text=item["query"])["embedding"], dtype=np.float32)
        cited = [str(d.meta.get("key") or d.id) for d in citation.run(queries=[item["query"]])["rankings"][0].documents]
        queries.append(Query(item["gold"], engine.query_terms(tokenizer.tokenize(item["query"])), embedding, cited))
    for query in queries:
        started = time.perf_counter()
        bm25, dense = engine.bm25(query.terms), engine.dense(query.embedding)
        fused = rrf([("citation", query.citation), ("bm25", bm25), ("dense", dense)])
        first_ms.append(1000 * (time.perf_counter() - started))
        first.append({"bm25": bm25, "dense": dense, "fused": fused})
    store.close()

    base_rows = [query_metrics(f["fused"], q.gold) for q, f in zip(queries, first, strict=True)]
    results: list[tuple[str, dict[str, float], list[float], str]] = []

    def record(name: str, rows: list[dict[str, float]], extra: list[float]) -> float:
        metrics = mean_metrics(rows)
        deltas = []
        for metric in ("R@10", "MRR@10"):
            mean, low, high, won, lost = paired_delta(rows, base_rows, metric)
            deltas.append(f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] {won}/{lost}")
        results.append((name, metrics, extra, " | ".join(deltas)))
        cells = " ".join(f"{c} {metrics[c]:.3f}" for c in COLUMNS)
        print(f"{name:48s} {cells}  +{percentile(extra, 50):.1f} ms  {' '.join(deltas)}", flush=True)
        return metrics["R@10"] + metrics["MRR@10"]

    zeros = [0.0] * len(queries)
    record("bm25 only (first pass)", [query_metrics(f["bm25"], q.gold) for q, f in zip(queries, first, strict=True)],
           zeros)
    record("dense only (first pass)", [query_metrics(f["dense"], q.gold) for q, f in zip(queries, first, strict=True)],
           zeros)
    record("hybrid baseline (first pass)", base_rows, zeros)
    # Within each family the setting with the best R@10 + MRR@10 on this query set goes on to the combinations.
    dense_scores = {(beta, m): record(f"dense Rocchio β={beta} m={m}",
                                      *run_config(engine, queries, first, dense_prf=(beta, m)))
                    for beta, m in DENSE_GRID}
    bm25_scores = {(alpha, n, m): record(f"BM25 RM3 α={alpha} n={n} m={m}",
                                         *run_config(engine, queries, first, bm25_prf=(alpha, n, m)))
                   for alpha, n, m in BM25_GRID}
    best_dense = max(dense_scores, key=dense_scores.get)
    best_bm25 = max(bm25_scores, key=bm25_scores.get)
    dense_name = "Rocchio β={} m={}".format(*best_dense)
    bm25_name = "RM3 α={} n={} m={}".format(*best_bm25)
    record(f"both: {dense_name} + {bm25_name}",
           *run_config(engine, queries, first, dense_prf=best_dense, bm25_prf=best_bm25))
    record(f"extra path: + {dense_name}", *run_config(engine, queries, first, dense_prf=best_dense, add=True))
    record(f"extra path: + {bm25_name}", *run_config(engine, queries, first, bm25_prf=best_bm25, add=True))
    record("extra paths: + both", *run_config(engine, queries, first, dense_prf=best_dense, bm25_prf=best_bm25,
                                              add=True))

    header = ("| system | " + " | ".join(COLUMNS) + " | extra p50 ms | extra mean ms | ΔR@10 [95% CI] won/lost "
              "| ΔMRR@10 [95% CI] won/lost |\n|" + "---|" * (len(COLUMNS) + 5))
    lines = [f"| {name} | " + " | ".join(f"{metrics[c]:.3f}" for c in COLUMNS)
             + f" | {percentile(extra, 50):.1f} | {sum(extra) / len(extra):.1f} | {deltas} |"
             for name, metrics, extra, deltas in results]
    table = header + "\n" + "\n".join(lines)
    print(table)
    feedback_hits = {m: sum(bool(set(f["fused"][:m]) & set(q.gold)) for q, f in zip(queries, first, strict=True))
                     for m in (3, 5)}
    notes = (f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}; {len(engine.keys)} articles, "
             f"{len(queries)} queries. First pass (BM25 + dense + RRF, query encoding excluded): p50 "
             f"{percentile(first_ms, 50):.1f} ms. Queries whose first-pass top 3 / top 5 hold a gold article: "
             f"{feedback_hits[3]} / {feedback_hits[5]}.")
    print(notes)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(f"{notes}\n\n{table}\n", encoding="utf-8")

if __name__ == "__main__":
    main()
