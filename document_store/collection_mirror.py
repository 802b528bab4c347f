"""An in-memory mirror of one Qdrant collection: its documents, their keys, dense vectors and BM25 weights.

Indexing stores each article's BM25 document weights in Qdrant as a sparse vector (`helpers.sparse_terms`);
the store stays the source of truth and this mirror is a read cache of it, loaded once per process and
reloaded when the collection changes (`invalidate`, called by whatever writes, or a changed
`CollectionMirror.signature`, checked every few seconds). It scores exactly as Qdrant's IDF modifier does:
``Σ idf(t) · count(t in query) · weight(t, doc)`` with ``idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))`` over the
documents that have terms, so the mirror and server-side search (`document_store.search_backend`) rank alike.

Dense search over the mirror is the same exact cosine search the embedded Qdrant does (it is brute force too),
without its per-point Python overhead; with a Qdrant server (``QDRANT_URL``) the retriever asks the server.

Usage::

    mirror = mirror_for(store)
    hits = mirror.bm25(["个人信息", "同意"], top_k=10)   # [(Document, score), ...]
    doc = mirror.by_key.get("中华人民共和国民法典第一千零三十二条")
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable

import numpy as np
from haystack import Document
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME

from document_store.qdrant_store import qdrant_client_of
from document_store.source_manifest import SourceManifest
from helpers.sparse_terms import BM25Matrix
from helpers.statute_labels import VERSION_SEP

RECHECK_SECONDS = 5.0


class CollectionMirror:
    """Documents of one collection with their BM25 weight matrix (documents × terms) and dense vectors."""

    def __init__(self, store: QdrantDocumentStore) -> None:
        self.store = store
        self.documents: list[Document] = []
        self.by_key: dict[str, Document] = {}
        self.versions: dict[str, list[Document]] = {}  # an article's in-force key → every version of it held
        self._laws: list[str] = []
        self._dense = np.zeros((0, 0), dtype=np.float32)
        self._bm25 = BM25Matrix([])
        self._signature: tuple | None = None  # what the loaded snapshot was read at; None = reload
        self._checked = 0.0
        self._lock = threading.RLock()  # guards the snapshot; never held through a scroll
        self._load_lock = threading.Lock()  # one reload at a time

    def _load(self) -> None:
        client = qdrant_client_of(self.store)
        docs, vectors, dense = [], [], []
        offset = None
        while True:
            points, offset = client.scroll(
                self.store.index, limit=2048, offset=offset, with_payload=True,
                with_vectors=[SPARSE_VECTORS_NAME, DENSE_VECTORS_NAME],
            )
            for point in points:
                payload = point.payload or {}
                named = point.vector if isinstance(point.vector, dict) else {}
                vectors.append(named.get(SPARSE_VECTORS_NAME))
                dense.append(named.get(DENSE_VECTORS_NAME))
                docs.append(Document(id=payload.get("id", str(point.id)), content=payload.get("content"),
                                     meta=payload.get("meta", {})))
            if offset is None:
                break
        bm25 = BM25Matrix(vectors)
        dim = next((len(v) for v in dense if v is not None), 0)
        matrix = np.zeros((len(docs), dim), dtype=np.float32)
        for row, vector in enumerate(dense):
            if vector is not None:
                matrix[row] = vector
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        with self._lock:  # searches go on with the previous snapshot until here
            self._bm25 = bm25
            self.documents = docs
            self.by_key = {str(d.meta.get("key")): d for d in docs if d.meta.get("key")}
            self.versions = {}
            for key, doc in self.by_key.items():
                self.versions.setdefault(key.split(VERSION_SEP)[0], []).append(doc)
            self._laws = sorted({str(d.meta["law"]) for d in docs if d.meta.get("law")})
            self._dense = matrix / np.where(norms > 0, norms, 1.0)

    def signature(self) -> tuple:
        """What identifies the collection's content: its point count and its source manifest (each indexing run
        stamps the sources it wrote), so a source replaced by another process with as many articles is noticed."""
        client = qdrant_client_of(self.store)
        records: tuple = ()
        if client.collection_exists(f"{self.store.index}__sources"):
            records = tuple((r.source, r.status, r.content_hash, r.updated_at) for r in SourceManifest(self.store).all())
        return self.store.count_documents(), records

    def refresh(self, force: bool = False) -> None:
        """Reload when forced, invalidated, never loaded, or (checked at most every few seconds) when the
        collection's `signature` changed. The scroll runs outside the snapshot lock."""
        now = time.monotonic()
        with self._lock:
            if not force and self._signature is not None and now - self._checked <= RECHECK_SECONDS:
                return
            self._checked = now
        with self._load_lock:
            signature = self.signature()  # read before the scroll: a write during it shows at the next check
            if force or signature != self._signature:
                self._load()
                self._signature = signature

    def invalidate(self) -> None:
        with self._lock:
            self._signature = None

    def bm25(
        self, terms: list[str], top_k: int, accept: Callable[[Document], bool] | None = None
    ) -> list[tuple[Document, float]]:
        """Top ``top_k`` documents for the query terms; ``accept`` filters candidates (metadata filters)."""
        self.refresh()
        with self._lock:
            bm25, documents = self._bm25, self.documents
        if not documents:
            return []
        scores = bm25.scores(terms)
        return _top(scores, np.flatnonzero(scores > 0), documents, top_k, accept)

    def dense(
        self, embedding: list[float], top_k: int, accept: Callable[[Document], bool] | None = None
    ) -> list[tuple[Document, float]]:
        """Top ``top_k`` documents by cosine similarity (exact, as the embedded Qdrant computes it)."""
        self.refresh()
        with self._lock:
            matrix, documents = self._dense, self.documents
        if not documents or matrix.shape[1] != len(embedding):
            return []
        query = np.asarray(embedding, dtype=np.float32)
        scores = matrix @ (query / (np.linalg.norm(query) or 1.0))
        return _top(scores, np.arange(len(documents)), documents, top_k, accept)

    def laws(self) -> list[str]:
        """Distinct law names in the collection."""
        self.refresh()
        return self._laws


FILTER_DEPTH = 4  # with a filter, the best FILTER_DEPTH × top_k candidates are tried before all of them


def _top(
    scores: np.ndarray, candidates: np.ndarray, documents: list[Document], top_k: int,
    accept: Callable[[Document], bool] | None,
) -> list[tuple[Document, float]]:
    """The best ``top_k`` candidates by score that ``accept`` lets through, in the order a full stable sort gives.

    Only the candidates scoring at least the ``depth``-th best score (ties included) are sorted; with a filter that
    lets too few of them through, all candidates are."""
    depth = top_k if accept is None else FILTER_DEPTH * top_k
    hits = _walk(scores, _best(scores, candidates, depth), documents, top_k, accept)
    if len(hits) < top_k and accept is not None and depth < candidates.size:
        hits = _walk(scores, candidates, documents, top_k, accept)
    return hits


def _best(scores: np.ndarray, candidates: np.ndarray, depth: int) -> np.ndarray:
    """The candidates scoring at least the ``depth``-th best score (all of them when there are no more)."""
    if candidates.size <= depth:
        return candidates
    values = scores[candidates]
    cut = -np.partition(-values, depth - 1)[depth - 1]
    return candidates[values >= cut]


def _walk(scores: np.ndarray, candidates: np.ndarray, documents: list[Document], top_k: int,
          accept: Callable[[Document], bool] | None) -> list[tuple[Document, float]]:
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    hits: list[tuple[Document, float]] = []
    for row in order:
        doc = documents[row]
        if accept is None or accept(doc):
            hits.append((doc, float(scores[row])))
            if len(hits) >= top_k:
                break
    return hits


# One mirror per store object, living as long as the store object does (a closed store's mirror goes with it).
_registry: weakref.WeakKeyDictionary[QdrantDocumentStore, CollectionMirror] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def mirror_for(store: QdrantDocumentStore) -> CollectionMirror:
    """The shared mirror of a store object."""
    with _registry_lock:
        if store not in _registry:
            _registry[store] = CollectionMirror(store)
        return _registry[store]


def invalidate(store: QdrantDocumentStore) -> None:
    """Make the mirror of ``store`` reload on next use (whatever writes or deletes points calls it)."""
    with _registry_lock:
        mirror = _registry.get(store)
    if mirror is not None:
        mirror.invalidate()
