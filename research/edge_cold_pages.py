"""Cold-page study: the dense path's latency on a large Qdrant Edge store whose files are not in the OS page cache,
with Edge's default memory placement and with ``Cached`` placements (pre-warmed at load), and with or without the
store's own warm-up steps (`document_store.edge_warmup`: the payload files read once, the graph searched).

Evicts the store's files from the page cache (``posix_fadvise(DONTNEED)``, no root needed; ``--warm`` skips it),
opens the store with the chosen placements, warms the retrieval pipeline up (the store's `preload`, less the steps
named by ``--skip``) and times it (query embedding included, top 10) over STARD questions, twice (each pass after
``--idle`` seconds of quiet): per pass p50 / p95 / max ms, the page faults taken (major ones read from disk) and the
RSS. Findings are in benchmarks/reports/scale_edge.md (third and fifth sessions) and document_store/edge_warmup.py.

    DATA_DIR=/tmp/idx_data .venv/bin/python research/edge_cold_pages.py /tmp/idx_data/scale/1000000-kb \\
        [--cached payload,hnsw,ids,vectors] [--skip payloads,graph] [--warm] [--mode dense] [--queries 100] [--idle 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import psutil
import qdrant_edge as edge

from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, percentile
from benchmarks.retrieval import DEFAULT_QUERIES
from document_store import edge_store
from pipelines.retrieval import build_retrieval_pipeline, retrieve
from pipelines.stores import open_document_store

PLACEMENTS = ("payload", "hnsw", "ids", "vectors")
WARM_UP_STEPS = {"payloads": "read_payloads", "graph": "warm_graph"}


def evict(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def cached_config(cached: set[str]):
    """A `_config` for the store with ``Cached`` placement for the named structures."""
    original = edge_store.QdrantEdgeDocumentStore._config

    def config(store: edge_store.QdrantEdgeDocumentStore) -> edge.EdgeConfig:
        base = original(store)
        hnsw = base.hnsw_config
        return edge.EdgeConfig(
            vectors={name: edge.EdgeVectorParams(size=v.size, distance=v.distance, memory=edge.Memory.Cached)
                     for name, v in base.vectors.items()} if "vectors" in cached else base.vectors,
            sparse_vectors=base.sparse_vectors, optimizers=base.optimizers,
            hnsw_config=edge.HnswIndexConfig(m=hnsw.m, ef_construct=hnsw.ef_construct,
                                             full_scan_threshold=hnsw.full_scan_threshold,
                                             memory=edge.Memory.Cached) if "hnsw" in cached else hnsw,
            payload_memory=edge.Memory.Cached if "payload" in cached else None,
            id_tracker_memory=edge.Memory.Cached if "ids" in cached else None)

    return config


def timed_pass(pipeline, queries: list[str]) -> dict[str, float]:
    before, latency = resource.getrusage(resource.RUSAGE_SELF), []
    for query in queries:
        started = time.perf_counter()
        retrieve(pipeline, [query], top_k=10)
        latency.append(1000 * (time.perf_counter() - started))
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"p50_ms": round(percentile(latency, 50), 1), "p95_ms": round(percentile(latency, 95), 1),
            "max_ms": round(max(latency), 1), "major_faults": after.ru_majflt - before.ru_majflt,
            "minor_faults": after.ru_minflt - before.ru_minflt,
            "rss_mib": round(psutil.Process().memory_info().rss / 2**20)}


def idle_then(seconds: float, run: Callable[..., dict[str, float]], *args: Any) -> dict[str, float]:
    """``run(*args)`` after ``seconds`` of idling (what a server's first questions after a quiet spell meet)."""
    time.sleep(seconds)
    return run(*args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store", help="a scale store folder (benchmarks/scale.py), e.g. …/scale/1000000-kb")
    parser.add_argument("--cached", default="", help=f"comma-separated, of {PLACEMENTS}")
    parser.add_argument("--skip", default="",
                        help=f"comma-separated warm-up steps to leave out, of {list(WARM_UP_STEPS)}")
    parser.add_argument("--warm", action="store_true", help="do not evict the files first")
    parser.add_argument("--mode", default="dense", choices=["bm25", "dense", "hybrid"])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--idle", type=float, default=0.0, help="seconds to wait after the warm-up and between passes")
    args = parser.parse_args()
    folder = Path(args.store)
    cached = {c for c in args.cached.split(",") if c}
    skip = {s for s in args.skip.split(",") if s}
    if cached - set(PLACEMENTS) or skip - set(WARM_UP_STEPS):
        parser.error(f"--cached takes {PLACEMENTS}, --skip {list(WARM_UP_STEPS)}")
    for step in skip:
        setattr(edge_store, WARM_UP_STEPS[step], lambda *args, **kwargs: None)
    if not args.warm:
        evict(folder)
    if cached:
        edge_store.QdrantEdgeDocumentStore._config = cached_config(cached)
    settings = dataclasses.replace(bench_settings(), qdrant_path=folder, collection="scale")
    queries = [q["query"] for q in load_queries(DEFAULT_QUERIES)[: args.queries]]
    started = time.perf_counter()
    store = open_document_store(settings)
    store.open()
    open_s = time.perf_counter() - started
    pipeline = build_retrieval_pipeline(store, settings, mode=args.mode, top_k=10)
    started = time.perf_counter()
    pipeline.warm_up()
    retrieve(pipeline, ["个人信息同意"], top_k=10)
    warm_s = time.perf_counter() - started
    print(json.dumps({"cached": sorted(cached), "skip": sorted(skip), "evicted": not args.warm, "mode": args.mode,
                      "open_s": round(open_s, 1), "warm_up_s": round(warm_s, 1),
                      "idle_s": args.idle, "passes": [idle_then(args.idle, timed_pass, pipeline, queries)
                                                      for _ in range(2)]}))
    store.close()


if __name__ == "__main__":
    main()
