"""The retrieval sub-pipeline: queries → BM25 and/or dense per query → RRF fusion.

Usage::

    pipeline = build_retrieval_pipeline(store, settings, mode="hybrid")
    docs = pipeline.run({"bm25": {"queries": [q]}, "dense": {"queries": [q]}})["joiner"]["documents"]
    # or simply:
    docs = retrieve(pipeline, [q], top_k=5)
"""

from __future__ import annotations

from typing import Any

from haystack import Document, Pipeline
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from components.dense_retriever import DenseRetriever
from components.jieba_bm25_retriever import JiebaBM25Retriever
from components.rrf_joiner import RRFJoiner
from pipelines.embedders import text_embedder
from pipelines.settings import Settings

MODES = ("bm25", "dense", "hybrid")
CANDIDATES_PER_PATH = 50


def build_retrieval_pipeline(
    document_store: QdrantDocumentStore, settings: Settings, mode: str = "hybrid", top_k: int = 10
) -> Pipeline:
    """BM25 (jieba) and/or dense retrieval of every query, fused with RRF (k=60) into ``top_k`` documents."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    pipeline = Pipeline()
    pipeline.add_component("joiner", RRFJoiner(top_k=top_k))
    if mode in ("bm25", "hybrid"):
        pipeline.add_component("bm25", JiebaBM25Retriever(document_store=document_store, top_k=CANDIDATES_PER_PATH))
        pipeline.connect("bm25.rankings", "joiner.rankings")
    if mode in ("dense", "hybrid"):
        dense = DenseRetriever(document_store=document_store, embedder=text_embedder(settings), top_k=CANDIDATES_PER_PATH)
        pipeline.add_component("dense", dense)
        pipeline.connect("dense.rankings", "joiner.rankings")
    return pipeline


def retrieve(
    pipeline: Pipeline, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None
) -> list[Document]:
    """Run a retrieval pipeline built by `build_retrieval_pipeline` for a list of queries."""
    data: dict[str, dict[str, Any]] = {"joiner": {"top_k": top_k}}
    for name in ("bm25", "dense"):
        if name in pipeline.graph.nodes:
            data[name] = {"queries": queries, "filters": filters}
    return pipeline.run(data)["joiner"]["documents"]
