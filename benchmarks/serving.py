"""Serving overhead: retrieval-only requests through the Hayhooks server vs the same call in process, and the
time from starting the server to its first answer. Indexes the default law into a temporary folder.

    .venv/bin/python benchmarks/serving.py [--requests 50] [--out benchmarks/reports/serving.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import httpx

from application.rag import AgenticRAG
from benchmarks.metrics import load_queries, percentile
from benchmarks.retrieval import DEFAULT_QUERIES
from config.settings import Settings
from harness.server_process import ServerProcess
from pipelines.indexing import Indexer, law_sources
from pipelines.stores import open_document_store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--out", default="benchmarks/reports/serving.md")
    args = parser.parse_args()
    queries = [q["query"] for q in load_queries(DEFAULT_QUERIES)[: args.requests]]
    data = Path(tempfile.mkdtemp()) / "data"
    os.environ["DATA_DIR"] = str(data)
    settings = Settings.from_env()
    store = open_document_store(settings)
    Indexer(store, settings).index(law_sources(list(settings.default_laws)), progress=False)

    rag = AgenticRAG(store, settings)
    rag.retrieve("预热")
    local = []
    for query in queries:
        started = time.perf_counter()
        rag.retrieve(query)
        local.append(1000 * (time.perf_counter() - started))
    rag.close()

    started = time.perf_counter()
    with ServerProcess({"LLM_BASE_URL": "http://127.0.0.1:9/v1"}) as server:  # retrieval only: no LLM is called
        url = f"{server.base_url}/agentic_rag/run"
        httpx.post(url, json={"query": "预热", "mode": "retrieve"}, timeout=60).raise_for_status()
        first_answer = time.perf_counter() - started
        remote = []
        with httpx.Client(timeout=30) as client:
            for query in queries:
                t = time.perf_counter()
                response = client.post(url, json={"query": query, "mode": "retrieve"})
                response.raise_for_status()
                remote.append(1000 * (time.perf_counter() - t))

    ratio = statistics.median(remote) / statistics.median(local)
    report = f"""# Serving overhead

Command: `.venv/bin/python benchmarks/serving.py {' '.join(sys.argv[1:])}`; {len(queries)} STARD train queries, \
retrieval only
(`mode=retrieve`, hybrid, top 10) over {settings.default_laws[0]}; embedded store; {os.cpu_count()} cores.

| measure | value |
|---|---|
| in-process `AgenticRAG.retrieve` p50 / p95 | {statistics.median(local):.1f} / {percentile(local, 95):.1f} ms |
| `POST /agentic_rag/run` (Hayhooks, keep-alive client) p50 / p95 | \
{statistics.median(remote):.1f} / {percentile(remote, 95):.1f} ms |
| ratio server / in-process (p50; goal ≤ 1.2) | {ratio:.2f} |
| server start → first answer | {first_answer:.1f} s |
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
