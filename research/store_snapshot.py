"""A knowledge base held in memory for a study: its documents with their vectors as numpy/scipy matrices (what
the in-process search mirror held before the Qdrant Edge store replaced it, issue 32).

Usage::

    from research.store_snapshot import snapshot
    snap = snapshot(store)               # any of the project's stores
    snap.dense @ query_vector            # cosine scores (rows normalised)
    snap.bm25.scores(["个人信息", "同意"])  # the store's BM25 scores, one per document
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from haystack import Document

from helpers.text_encoding.sparse_terms import BM25Matrix


@dataclass(frozen=True)
class Snapshot:
    documents: list[Document]  # without their vectors
    by_key: dict[str, Document]
    dense: np.ndarray  # documents × dimensions, rows normalised
    bm25: BM25Matrix


def snapshot(store) -> Snapshot:
    """Read every document of ``store`` once, with its dense and BM25 vectors."""
    was = store.return_embedding
    store.return_embedding = True
    try:
        read = store.filter_documents()
    finally:
        store.return_embedding = was
    dim = next((len(d.embedding) for d in read if d.embedding is not None), 0)
    dense = np.zeros((len(read), dim), dtype=np.float32)
    for row, doc in enumerate(read):
        if doc.embedding is not None:
            dense[row] = doc.embedding
    norms = np.linalg.norm(dense, axis=1, keepdims=True)
    documents = [Document(id=d.id, content=d.content, meta=d.meta) for d in read]
    return Snapshot(documents=documents, by_key={str(d.meta["key"]): d for d in documents if d.meta.get("key")},
                    dense=dense / np.where(norms > 0, norms, 1.0), bm25=BM25Matrix([d.sparse_embedding for d in read]))
