"""Indexing benchmark: all current statute articles through the indexing pipeline vs the bare encode of their texts.

The bare encode is the pipeline's own encoder called directly on the same texts, at the same batch size (the ONNX
encoder; for ``--backend torch`` the `SentenceTransformer`), once before and once after the pipeline run, so that a
machine that speeds up or slows down meanwhile shows in the report rather than in the ratio.

Writes benchmarks/reports/indexing.md. The store it builds (collection ``statutes_all`` under
``DATA_DIR/corpus_qdrant``) is reused by the retrieval benchmark.

    .venv/bin/python benchmarks/indexing.py [--limit N] [--backend torch|onnx] [--skip-bare]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import resource
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from config.settings import Settings
from pipelines.embedders import META_FIELDS_TO_EMBED
from pipelines.indexing import Indexer, Source, build_indexing_pipeline, law_sources
from pipelines.stores import open_document_store
from provisioning.train import base_settings, corpus_settings

if TYPE_CHECKING:
    from haystack import Pipeline
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore



def bench_settings(backend: str | None = None) -> Settings:
    """The corpus store of the base (zero-shot) e5-small (``DATA_DIR/corpus_qdrant``): the benchmarks' baseline.

    Not the shipped adapted embedder: it was trained on the STARD train questions the benchmarks ask, so numbers
    with it would be in-sample. Trained models enter the benchmarks only through `benchmarks.folds`."""
    env = Settings.from_env()
    settings = corpus_settings(env if os.environ.get("EMBEDDING_MODEL", "").strip() else base_settings(env))
    return dataclasses.replace(settings, embedding_backend=backend) if backend else settings


def bench_retrieval(settings: Settings, top_k: int = 10) -> tuple[QdrantDocumentStore, Pipeline]:
    """The bench store and a warmed-up hybrid retrieval pipeline over it (what round 1 of the agentic pipeline
    runs); close the store when done."""
    from pipelines.retrieval import build_retrieval_pipeline

    store = open_document_store(settings)
    pipeline = build_retrieval_pipeline(store, settings, top_k=top_k)
    pipeline.warm_up()
    return store, pipeline


def timed(owner: Any, method: str, spent: dict[str, float], label: str, nested: str | None = None) -> None:
    """Replace ``owner.method`` by a wrapper adding its seconds to ``spent[label]`` (where the time goes), less
    what a ``nested`` label timed meanwhile (counted there)."""
    run: Callable[..., Any] = getattr(owner, method)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started, before = time.perf_counter(), spent[nested] if nested else 0.0
        try:
            return run(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - started - ((spent[nested] - before) if nested else 0.0)

    setattr(owner, method, wrapper)


STAGES = {"splitter": "split into articles", "bm25": "jieba BM25 weights", "embedder": "dense embedding",
          "writer": "write to the store"}


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bare_encode(pipeline: Pipeline, texts: list[str], batch_size: int) -> float:
    """Seconds the indexing pipeline's encoder takes for ``texts`` called directly (no pipeline, no store)."""
    embedder = pipeline.get_component("embedder")
    started = time.perf_counter()
    if hasattr(embedder, "encoder"):  # OnnxDocumentEmbedder
        embedder.encoder().encode(texts, batch_size)
    else:  # SentenceTransformersDocumentEmbedder
        embedder.embedding_backend.model.encode(texts, batch_size=batch_size, normalize_embeddings=True)
    return time.perf_counter() - started


def embed_texts(sources: list[Source], settings: Settings) -> list[str]:
    """The exact strings the document embedder encodes: prefix + meta fields + content, newline-joined."""
    texts = []
    for source in sources:
        for doc in source.documents:
            parts = [str(doc.meta[f]) for f in META_FIELDS_TO_EMBED if doc.meta.get(f)] + [doc.content or ""]
            texts.append(settings.passage_prefix + "\n".join(parts))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0, help="only the first N laws (0 = all)")
    parser.add_argument("--backend", choices=["torch", "onnx"], default=None)
    parser.add_argument("--skip-bare", action="store_true")
    parser.add_argument("--keep", action="store_true", help="reuse the existing store instead of a fresh one")
    parser.add_argument("--out", default="benchmarks/reports/indexing.md")
    args = parser.parse_args()
    settings = bench_settings(args.backend)

    sources = law_sources(["all"])
    if args.limit:
        sources = sources[: args.limit]
    n_articles = sum(len(s.documents) for s in sources)
    if not args.keep:
        shutil.rmtree(settings.qdrant_path, ignore_errors=True)

    store = open_document_store(settings)
    pipeline = build_indexing_pipeline(store, settings)
    pipeline.warm_up()
    texts = embed_texts(sources, settings)
    bare = [] if args.skip_bare else [bare_encode(pipeline, texts, settings.embedding_batch_size)]
    if bare:
        print(f"bare encode before: {len(texts)} texts in {bare[0]:.1f} s")
    indexer = Indexer(store, settings, pipeline)
    spent: dict[str, float] = defaultdict(float)
    for name, label in STAGES.items():
        timed(pipeline.get_component(name), "run", spent, label)
    timed(indexer, "_avgdl_after", spent, "average-length pre-pass (tokenise)", nested=STAGES["splitter"])
    timed(indexer.store, "optimize", spent, "optimise (HNSW build)")
    started = time.perf_counter()
    indexer.index(sources, progress=True)
    pipeline_seconds = time.perf_counter() - started
    spent["the rest (pipeline input copies, manifest, deletes)"] = pipeline_seconds - sum(spent.values())
    pipeline_peak = peak_rss_mib()
    count = store.count_documents()
    store.close()
    print(f"pipeline: {n_articles} articles in {pipeline_seconds:.1f} s, store holds {count}, "
          f"peak {pipeline_peak:.0f} MiB")
    if bare:
        bare.append(bare_encode(pipeline, texts, settings.embedding_batch_size))
        print(f"bare encode after: {len(texts)} texts in {bare[1]:.1f} s")
    bare_seconds = sum(bare) / len(bare) if bare else None

    ratio = f"{pipeline_seconds / bare_seconds:.3f}" if bare_seconds else "n/a"
    stages = "\n".join(f"| {label} | {seconds:.1f} s | {100 * seconds / pipeline_seconds:.1f} % |"
                       for label, seconds in spent.items())
    bare_line = (f"{bare_seconds:.1f} s ({n_articles / bare_seconds:.1f} articles/s; {bare[0]:.1f} s before the "
                 f"pipeline, {bare[1]:.1f} s after)" if bare_seconds else "not run")
    report = f"""# Indexing benchmark

Command: `.venv/bin/python benchmarks/indexing.py{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}`
Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; embedding model
`{settings.embedding_model}`, backend `{settings.embedding_backend}`, batch size {settings.embedding_batch_size}.

| measure | value |
|---|---|
| articles | {n_articles} ({len(sources)} laws) |
| documents in the store after the run | {count} |
| pipeline wall time (load → split → jieba BM25 → embed → write to embedded Qdrant) | {pipeline_seconds:.1f} s |
| pipeline throughput | {n_articles / pipeline_seconds:.1f} articles/s |
| peak memory (RSS) during the pipeline run | {pipeline_peak:.0f} MiB |
| bare encode: the pipeline's encoder on the same texts, same batch size (mean of two runs) | {bare_line} |
| ratio pipeline / bare encode (goal ≤ 1.05) | {ratio} |

Model loading is excluded from both timings (the pipeline is warmed up first, and the bare encode uses its
encoder). Peak RSS includes the bare encode before the pipeline (the same encoder).

Where the pipeline's time went:

| stage | seconds | share |
|---|---|---|
{stages}
"""
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
