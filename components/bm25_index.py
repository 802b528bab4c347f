"""An in-memory BM25 index over the term frequencies that indexing stored in Qdrant as sparse vectors.

The store is the source of truth; this index is a read cache of it, loaded once per process and reloaded
when the collection changes (`invalidate`, called by the indexer, or a changed point count). Scoring is
Lucene BM25: ``idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`` with
``idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))``.

Usage::

    index = bm25_index_for(store, k1=1.2, b=0.75)
    hits = index.search(["个人信息", "同意"], top_k=10)   # [(Document, score), ...]
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from haystack import Document
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.converters import SPARSE_VECTORS_NAME
from scipy import sparse

from components.jieba_tokenizer import term_id
from document_store.qdrant_store import qdrant_client_of

RECHECK_SECONDS = 5.0


class BM25Index:
    """Documents of one collection with a BM25 weight matrix (documents × terms, CSC for column slices)."""

    def __init__(self, store: QdrantDocumentStore, k1: float, b: float) -> None:
        self.store, self.k1, self.b = store, k1, b
        self.documents: list[Document] = []
        self._columns: dict[int, int] = {}
        self._weights = sparse.csc_matrix((0, 0))
        self._idf = np.zeros(0)
        self._count = -1
        self._checked = 0.0
        self._lock = threading.Lock()

    def _load(self) -> None:
        client = qdrant_client_of(self.store)
        docs, rows, cols, tfs = [], [], [], []
        columns: dict[int, int] = {}
        offset = None
        while True:
            points, offset = client.scroll(
                self.store.index, limit=2048, offset=offset, with_payload=True, with_vectors=[SPARSE_VECTORS_NAME]
            )
            for point in points:
                payload = point.payload or {}
                vector = (point.vector or {}).get(SPARSE_VECTORS_NAME) if isinstance(point.vector, dict) else None
                row = len(docs)
                docs.append(Document(id=payload.get("id", str(point.id)), content=payload.get("content"),
                                     meta=payload.get("meta", {})))
                if vector is not None:
                    for index, value in zip(vector.indices, vector.values, strict=True):
                        rows.append(row)
                        cols.append(columns.setdefault(index, len(columns)))
                        tfs.append(value)
            if offset is None:
                break
        n_docs, n_terms = len(docs), len(columns)
        tf = sparse.csr_matrix((np.asarray(tfs, dtype=np.float32), (rows, cols)), shape=(n_docs, n_terms))
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        avgdl = float(lengths.mean()) if n_docs and lengths.mean() > 0 else 1.0
        norm = self.k1 * (1 - self.b + self.b * lengths / avgdl)
        weights = tf.copy()
        row_norm = np.repeat(norm, np.diff(tf.indptr))
        weights.data = tf.data * (self.k1 + 1) / (tf.data + row_norm)
        df = np.bincount(tf.indices, minlength=n_terms)
        self._idf = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        self._weights = weights.tocsc()
        self._columns = columns
        self.documents = docs
        self._count = n_docs

    def refresh(self, force: bool = False) -> None:
        """Reload when forced, never loaded, or (at most every few seconds) when the count changed."""
        with self._lock:
            now = time.monotonic()
            if force or self._count < 0 or now - self._checked > RECHECK_SECONDS and self.store.count_documents() != self._count:
                self._load()
            self._checked = now

    def search(
        self, terms: list[str], top_k: int, accept: Callable[[Document], bool] | None = None
    ) -> list[tuple[Document, float]]:
        """Top ``top_k`` documents for the query terms; ``accept`` filters candidates (metadata filters)."""
        self.refresh()
        counts = Counter(self._columns.get(term_id(t)) for t in terms)
        counts.pop(None, None)
        if not counts or not self.documents:
            return []
        cols = list(counts)
        query = self._idf[cols] * np.asarray([counts[c] for c in cols], dtype=np.float32)
        scores = np.asarray(self._weights[:, cols] @ query).ravel()
        candidates = np.flatnonzero(scores > 0)
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        hits: list[tuple[Document, float]] = []
        for row in order:
            doc = self.documents[row]
            if accept is None or accept(doc):
                hits.append((doc, float(scores[row])))
                if len(hits) >= top_k:
                    break
        return hits


_registry: dict[tuple[int, float, float], BM25Index] = {}
_registry_lock = threading.Lock()


def bm25_index_for(store: QdrantDocumentStore, k1: float, b: float) -> BM25Index:
    """The shared index of a store object (one per store, k1 and b)."""
    key = (id(store), k1, b)
    with _registry_lock:
        if key not in _registry:
            _registry[key] = BM25Index(store, k1, b)
        return _registry[key]


def invalidate(store: QdrantDocumentStore) -> None:
    """Force every index of ``store`` to reload on next use (called after writes)."""
    with _registry_lock:
        for (store_id, _, _), index in _registry.items():
            if store_id == id(store):
                index._count = -1
