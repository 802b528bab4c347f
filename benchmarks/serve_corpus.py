"""Serving the whole statute corpus: the Hayhooks server's start-up, its first answer and its memory.

Starts `python -m interfaces.server_app` on the benchmark store (every article, built by benchmarks/indexing.py,
the base e5-small embedder), with no LLM (retrieval-only requests), and measures: seconds from start to the
deployed pipelines, to the first retrieval answer (the store opened and searched once), the RSS of the server's
process tree then and after ``--requests`` STARD questions, and their p50 / p95.

    .venv/bin/python benchmarks/serve_corpus.py [--requests 50] [--out benchmarks/reports/serve_corpus.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import httpx
import psutil

from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, percentile
from benchmarks.retrieval import DEFAULT_QUERIES
from harness.server_process import ServerProcess

MIB = 1024 * 1024


def tree_rss(pid: int) -> float:
    """Resident MiB of a process and its children (the embedded LLM is not started: no generation is asked)."""
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / MIB


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--out", default="benchmarks/reports/serve_corpus.md")
    parser.add_argument("--label", default="", help="what this run measures (e.g. the commit), for the report")
    args = parser.parse_args()
    settings = bench_settings()
    queries = [q["query"] for q in load_queries(DEFAULT_QUERIES)[: args.requests]]
    env = {"QDRANT_PATH": str(Path(settings.qdrant_path).resolve()), "QDRANT_COLLECTION": settings.collection,
           "EMBEDDING_MODEL": str(settings.embedding_model), "LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    started = time.perf_counter()
    with ServerProcess(env, timeout=600) as server:
        assert server.process is not None
        deployed = server.startup_seconds
        deployed_rss = tree_rss(server.process.pid)
        url = f"{server.base_url}/agentic_rag/run"
        httpx.post(url, json={"query": "预热", "mode": "retrieve"}, timeout=600).raise_for_status()
        first_answer = time.perf_counter() - started
        first_rss = tree_rss(server.process.pid)
        times = []
        with httpx.Client(timeout=60) as client:
            for query in queries:
                t = time.perf_counter()
                client.post(url, json={"query": query, "mode": "retrieve"}).raise_for_status()
                times.append(1000 * (time.perf_counter() - t))
        after_rss = tree_rss(server.process.pid)
    report = f"""# Serving the whole corpus{f': {args.label}' if args.label else ''}

Command: `.venv/bin/python benchmarks/serve_corpus.py {' '.join(sys.argv[1:])}`; collection `{settings.collection}`
at `{settings.qdrant_path}`; {len(queries)} STARD train questions, retrieval only (`mode=retrieve`, hybrid, top 10);
{os.cpu_count()} cores, Python {platform.python_version()}.

| measure | value |
|---|---|
| start → pipelines deployed | {deployed:.1f} s |
| start → first answer (store opened and searched) | {first_answer:.1f} s |
| RSS of the server's process tree: deployed / after the first answer / after {len(queries)} questions | \
{deployed_rss:.0f} / {first_rss:.0f} / {after_rss:.0f} MiB |
| `POST /agentic_rag/run` p50 / p95 | {percentile(times, 50):.1f} / {percentile(times, 95):.1f} ms |
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
