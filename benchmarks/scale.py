"""Scale benchmark: store size, build throughput, process memory and query latency at growing collection sizes, on
the embedded store (a Qdrant Edge shard, Qdrant's engine in-process), whose HNSW recall against its exact search is
measured for a sweep of ``hnsw_ef``.

The first size is the real corpus (every current article, with the dense vectors of the benchmark store built by
benchmarks/indexing.py). Larger sizes add synthetic articles made by recombining real ones: the first half of one
article's sentences and the second half of another's, in laws named 合成法NNNNN (100 articles each). A synthetic
article's dense vector is the normalised sum of its two parents' (no embedding: this measures capacity, not
quality; embedding throughput is in reports/indexing.md). BM25 weights are computed by the indexing encoder over
the whole collection.

Each size is measured in a fresh child process: RSS after the query embedder is loaded, after the store is
opened, after the search is warmed up, and after the queries; latency per query of BM25, dense, hybrid and an
exact citation through the retrieval pipeline. Stores are kept under ``DATA_DIR/scale`` and reused.

    .venv/bin/python benchmarks/scale.py [--sizes 23490,100000] [--queries 20] [--max-minutes 40]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import psutil
from haystack import Document

from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, percentile
from benchmarks.retrieval import DEFAULT_QUERIES
from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder
from components.writers.qdrant_point_writer import QdrantPointWriter
from config.settings import Settings
from document_store.edge_sizing import EXACT_BELOW, HNSW_EF, WIDER_EF, WIDER_EF_FROM
from document_store.edge_store import QdrantEdgeDocumentStore
from helpers.statutes.numerals import int_to_cn
from helpers.statutes.versions import version_filter
from pipelines.retrieval import build_retrieval_pipeline, retrieve
from pipelines.stores import open_document_store

MIB = 1024 * 1024
PER_LAW = 100
EF_SWEEP = (16, 32, 64, 128, 256, 512, 1024)  # hnsw_ef values whose recall against the exact search is measured


def real_articles(settings: Settings) -> list[Document]:
    """Every article of the benchmark store, with its dense vector."""
    store = open_document_store(settings)
    store.return_embedding = True
    try:
        return sorted((Document(id=d.id, content=d.content, meta=d.meta, embedding=d.embedding)
                       for d in store.filter_documents()), key=lambda d: d.id)
    finally:
        store.close()


def articles(real: list[Document], size: int, seed: int = 0) -> Iterator[Document]:
    """``size`` articles: the real ones first, then synthetic ones recombined from pairs of real ones (see the
    module docstring), made one at a time (a million of them with their vectors would not fit in memory)."""
    yield from real[:size]
    rng = random.Random(seed)
    for j in range(max(0, size - len(real))):
        a, b = rng.choice(real), rng.choice(real)
        first = [s for s in (a.content or "").split("。") if s]
        second = [s for s in (b.content or "").split("。") if s]
        text = "。".join(first[: max(1, len(first) // 2)] + second[len(second) // 2:]) + "。"
        law, number = f"合成法{j // PER_LAW:05d}", f"第{int_to_cn(j % PER_LAW + 1)}条"
        vector = np.asarray(a.embedding) + np.asarray(b.embedding)
        yield Document(content=text, embedding=(vector / np.linalg.norm(vector)).tolist(), meta={
            "law": law, "article_no": number, "key": law + number, "chapter": None, "section": None,
            "source": f"synthetic:{law}", "status": "现行有效"})


def batches(docs: Iterator[Document], size: int = 4096) -> Iterator[list[Document]]:
    while batch := list(itertools.islice(docs, size)):
        yield batch


def build(path: Path, size: int, real: list[Document], settings: Settings) -> dict[str, float]:
    """A Qdrant Edge store of ``size`` articles at ``path`` with its HNSW graph (built by the engine's optimizer,
    timed apart); reused when it already holds them. Streamed as indexing does: every article's terms counted
    once for the average length (kept compactly), then weighted and written 4,096 at a time."""
    marker = path / "built.json"
    if marker.is_file() and json.loads(marker.read_text())["size"] == size:
        return json.loads(marker.read_text())
    shutil.rmtree(path, ignore_errors=True)
    encoder = JiebaBM25DocumentEncoder(k1=settings.bm25_k1, b=settings.bm25_b)
    store = open_document_store(dataclasses.replace(settings, qdrant_path=path, collection="scale"))
    writer = QdrantPointWriter(document_store=store)  # what the indexing pipeline writes with
    weighting_s = write_s = 0.0
    sparse_terms = payload_bytes = 0
    with encoder.counting_once(keep_at_most=size):
        started = time.perf_counter()
        length = sum(sum(encoder.term_counts(d).values()) for d in articles(real, size))
        weighting_s += time.perf_counter() - started
        for batch in batches(articles(real, size)):
            started = time.perf_counter()
            weighted = encoder.run(documents=batch, avgdl=length / size)["documents"]
            weighting_s += time.perf_counter() - started
            started = time.perf_counter()
            writer.run(documents=weighted)
            write_s += time.perf_counter() - started
            sparse_terms += sum(len(d.sparse_embedding.indices) for d in weighted if d.sparse_embedding)
            payload_bytes += sum(len(json.dumps({"content": d.content, "meta": d.meta}, ensure_ascii=False).encode())
                                 for d in batch)
    started = time.perf_counter()
    store.optimize()  # the HNSW graph (the store's default m, from its exact_below size on), as indexing does
    index_s = time.perf_counter() - started
    stored = store.count_documents()
    store.close()
    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    built = {"size": stored, "store": "Qdrant Edge", "weighting_s": weighting_s,
             "write_s": write_s, "index_s": index_s, "disk_bytes": disk,
             "sparse_nnz": sparse_terms / size, "payload_bytes": payload_bytes / size,
             "dense_bytes": 4 * len(real[0].embedding)}
    marker.write_text(json.dumps(built))
    return built


def rss() -> float:
    return psutil.Process().memory_info().rss / MIB


def measure(path: Path, queries: list[str]) -> dict:
    """Run in a child process: memory stages and per-query latencies for one store."""
    settings = dataclasses.replace(bench_settings(), qdrant_path=path, collection="scale")
    memory = {"start": rss()}
    started = time.perf_counter()
    store = open_document_store(settings)
    memory["store_opened"], open_s = rss(), time.perf_counter() - started
    pipelines = {mode: build_retrieval_pipeline(store, settings, mode=mode, top_k=10)
                 for mode in ("bm25", "dense", "hybrid")}
    for pipeline in pipelines.values():  # the query embedder and jieba loaded, the backend not yet used
        if "dense" in pipeline.graph.nodes:
            embedder = pipeline.get_component("dense").embedder
            embedder.warm_up()
            embedder.run(text="预热")
        if "bm25" in pipeline.graph.nodes:
            pipeline.get_component("bm25").tokenize("预热")
    memory["components_ready"] = rss()
    started = time.perf_counter()
    for pipeline in pipelines.values():
        pipeline.warm_up()
        retrieve(pipeline, ["个人信息同意"], top_k=10)
    memory["backend_warm"], warm_s = rss(), time.perf_counter() - started
    latency: dict[str, list[float]] = {mode: [] for mode in pipelines}
    latency["citation"] = []
    cited = 0
    for mode, pipeline in pipelines.items():  # each path from the same start: the cache a warm-up leaves
        store.drop_cache()
        pipeline.warm_up()
        for query in queries:
            started = time.perf_counter()
            retrieve(pipeline, [query], top_k=10)
            latency[mode].append(1000 * (time.perf_counter() - started))
    for query in ("中华人民共和国民法典第一千零三十二条", "个人信息保护法第13条是什么"):
        started = time.perf_counter()
        docs = retrieve(pipelines["hybrid"], [query], top_k=10)
        latency["citation"].append(1000 * (time.perf_counter() - started))
        cited += bool(docs and "citation" in docs[0].meta["retrieval"]["paths"])
    memory["after_queries"] = rss()
    memory["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sweep = hnsw_sweep(store, pipelines["dense"].get_component("dense").embedder, queries)
    store.close()
    return {"memory": memory, "open_s": open_s, "warm_s": warm_s, "latency": latency, "cited": cited,
            "hnsw": sweep}


def hnsw_sweep(store: QdrantEdgeDocumentStore, embedder, queries: list[str]) -> dict[str, dict[str, float]]:
    """For each ``hnsw_ef``: recall@10 of the HNSW search against the exact one (same filter as the pipeline's:
    articles in force) and its p50 / p95 ms, engine call only; ``exact`` likewise."""
    current = version_filter(None)
    vectors = [embedder.run(text=q)["embedding"] for q in queries]
    exact, times = [], []
    for v in vectors:
        started = time.perf_counter()
        exact.append({d.id for d in store.query_dense(v, top_k=10, filters=current, exact=True)})
        times.append(1000 * (time.perf_counter() - started))
    sweep = {"exact": {"recall": 1.0, "p50": percentile(times, 50), "p95": percentile(times, 95)}}
    for ef in EF_SWEEP:
        found, times = [], []
        for v, truth in zip(vectors, exact, strict=True):
            started = time.perf_counter()
            ids = {d.id for d in store.query_dense(v, top_k=10, filters=current, hnsw_ef=ef)}
            times.append(1000 * (time.perf_counter() - started))
            found.append(len(ids & truth) / max(1, len(truth)))
        sweep[str(ef)] = {"recall": statistics.mean(found), "p50": percentile(times, 50),
                          "p95": percentile(times, 95)}
    return sweep


def report(rows: list[dict], args: argparse.Namespace) -> str:
    build_lines = [("| articles | store | BM25 weighting s | write s | writes/s | HNSW build s | disk MiB | "
                    "bytes/article on disk | dense B | sparse terms | sparse B | payload B |"),
                   "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for r in rows:
        b = r["build"]
        if (b["size"], b.get("store")) in seen:
            continue
        seen.add((b["size"], b.get("store")))
        build_lines.append(
            f"| {b['size']:,} | {b.get('store', 'local mode')} | {b['weighting_s']:.0f} | {b['write_s']:.0f} | "
            f"{b['size'] / b['write_s']:.0f} | {b.get('index_s', 0):.0f} | "
            f"{b['disk_bytes'] / MIB:.0f} | {b['disk_bytes'] / b['size']:.0f} | {b['dense_bytes']} | "
            f"{b['sparse_nnz']:.0f} | {8 * b['sparse_nnz']:.0f} | {b['payload_bytes']:.0f} |")
    run_lines = [("| articles | open s | warm-up s | RSS at start MiB | + store opened | + embedder, jieba | "
                  "+ backend warm | after queries | peak | BM25 p50 / p95 ms | dense p50 / p95 | hybrid p50 / p95 | "
                  "citation (hybrid) ms |"),
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, lat = r["run"]["memory"], r["run"]["latency"]
        cells = " | ".join(f"{percentile(lat[k], 50):.0f} / {percentile(lat[k], 95):.0f}" for k in ("bm25", "dense",
                                                                                                   "hybrid"))
        run_lines.append(
            f"| {r['build']['size']:,} | {r['run']['open_s']:.1f} | {r['run']['warm_s']:.1f} | "
            f"{m['start']:.0f} | {m['store_opened'] - m['start']:+.0f} | "
            f"{m['components_ready'] - m['store_opened']:+.0f} | "
            f"{m['backend_warm'] - m['components_ready']:+.0f} | {m['after_queries']:.0f} | {m['peak']:.0f} | "
            f"{cells} | {statistics.mean(lat['citation']):.0f} ({r['run']['cited']}/2 found) |")
    sweep_lines = ["| articles | hnsw_ef | recall@10 vs exact | p50 ms | p95 ms |", "|---|---|---|---|---|"]
    for r in rows:
        for ef, m in r["run"].get("hnsw", {}).items():
            sweep_lines.append(f"| {r['build']['size']:,} | {ef} | {m['recall']:.3f} | {m['p50']:.1f} | "
                               f"{m['p95']:.1f} |")
    return f"""# Scale benchmark

Command: `.venv/bin/python benchmarks/scale.py {' '.join(sys.argv[1:])}`
Machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 1024 ** 3:.0f} GiB, \
Python {platform.python_version()}.
Store: the embedded Qdrant Edge store on disk (HNSW graph from {EXACT_BELOW:,} articles on, `hnsw_ef` {HNSW_EF},
{WIDER_EF} from {WIDER_EF_FROM:,} articles on);
{args.queries} STARD questions per size,
through the Haystack retrieval pipeline (query embedding included), top 10.

## Building

{chr(10).join(build_lines)}

BM25 weighting = jieba tokenisation and weights of every article (one process); write = `QdrantPointWriter` into
the embedded store. Dense 384 float32; a sparse term is a u32 index and an f32 weight.

## Memory and latency

RSS is the measuring process's resident memory: at start (Python and the libraries imported), then the change when
the store is opened (Qdrant Edge maps its segments; payloads stay on disk), when the query embedder and jieba are
loaded (the same for every size), and when the search is first used (the warm-up preloads up to 50,000 documents
into the search cache). Peak includes the query embedder's loading. Each path's latency is measured over all the
questions starting from the cache a warm-up leaves (documents beyond it are read from the shard on first use).

{chr(10).join(run_lines)}

## Qdrant Edge: HNSW against exact search

The Edge store's dense search (engine call, articles-in-force filter, top 10) with the HNSW graph (the store's
default m = {QdrantEdgeDocumentStore(path="-").hnsw_m}) at each `hnsw_ef`, against the exact search over the same shard.

{chr(10).join(sweep_lines)}
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="23490,100000")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--max-minutes", type=float, default=40.0, help="stop starting new sizes after this")
    parser.add_argument("--out", default="benchmarks/reports/scale.md")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # child mode: the store's path
    args = parser.parse_args()
    queries = [q["query"] for q in load_queries(str(DEFAULT_QUERIES))[: args.queries]]
    if args.measure:
        print(json.dumps(measure(Path(args.measure), queries)))
        return
    settings = bench_settings()
    deadline = time.monotonic() + 60 * args.max_minutes
    real = real_articles(settings)
    print(f"{len(real)} real articles", flush=True)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        if time.monotonic() > deadline:
            print(f"time budget spent: {size} not run", flush=True)
            break
        path = settings.data_dir / "scale" / f"{size}-kb"
        built = build(path, size, real, settings)
        print(f"built {size}: {built}", flush=True)
        child = subprocess.run([sys.executable, __file__, "--queries", str(args.queries), "--measure", str(path)],
                               capture_output=True, text=True, check=True)
        run = json.loads(child.stdout.strip().splitlines()[-1])
        rows.append({"build": built, "run": run})
        print(f"{size}: {run['memory']} open {run['open_s']:.1f}s", flush=True)
        Path(args.out).write_text(report(rows, args), encoding="utf-8")
    print(report(rows, args))


if __name__ == "__main__":
    main()
