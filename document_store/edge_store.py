"""QdrantEdgeDocumentStore: a Haystack document store over Qdrant Edge, Qdrant's own engine running in-process.

`qdrant-edge-py` runs Qdrant's Rust engine in this process on one on-disk shard. This store keeps the layout of
qdrant-haystack's server collections (`QdrantServerDocumentStore`: the same `KnowledgeBaseStore`), so both answer alike:

- points are made and read by qdrant-haystack's own converters (id: the UUID5 of the document id; payload:
  ``Document.to_dict(flatten=False)``);
- vectors are named ``text-dense`` (cosine) and ``text-sparse`` (the engine applies the IDF modifier);
- Haystack filters are translated by qdrant-haystack's `convert_filters_to_qdrant`, then mapped one to one onto
  Edge's filter classes (`edge_filter`); a condition Edge has no twin for is a clear `FilterError`.

One process owns a shard: a second opener gets `StoreLockedError`. Writes are durable once `write_documents` returns
(the log is flushed); `close()` releases the lock.

Usage::

    from document_store.edge_store import QdrantEdgeDocumentStore
    store = QdrantEdgeDocumentStore(path="data/edge/statutes", embedding_dim=384)
    store.write_documents(documents)                     # DuplicatePolicy.NONE by default: a stored id is refused
    store.query_dense(embedding, top_k=10)               # [Document, ...] with cosine scores
    store.close()
"""

from __future__ import annotations

import shutil
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import qdrant_edge as edge
from haystack import Document, default_from_dict, default_to_dict, logging
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant.converters import (
    DENSE_VECTORS_NAME,
    SPARSE_VECTORS_NAME,
    convert_id,
)

from document_store.edge_cache import DocumentCache
from document_store.edge_filters import BOOL_TWINS, bool_twin, edge_filter
from document_store.edge_points import to_document, to_point, to_write, twins
from document_store.edge_records import EdgeRecords
from document_store.edge_sizing import EXACT_BELOW, HNSW_EF, search_ef, shard_config, stored_dense_size
from document_store.edge_warmup import read_payloads, warm_graph
from document_store.errors import StoreConfigError, StoreLockedError
from document_store.payload_indexes import PAYLOAD_INDEXES, SOURCE_FACET_LIMIT
from document_store.qdrant_filters import qdrant_filter

logger = logging.getLogger(__name__)

SCROLL_PAGE = 1_000
CONFIG_FILE = "edge_config.json"  # what Edge writes beside segments/ and wal/
DOCUMENTS = "documents"  # the shard's folder inside a knowledge base's folder
LOCKED_MARK = "WouldBlock"  # Edge's message when another owner holds the shard's write-ahead log
INDEX_TYPES = {"keyword": edge.PayloadSchemaType.Keyword, "integer": edge.PayloadSchemaType.Integer}


class QdrantEdgeDocumentStore:
    """A `KnowledgeBaseStore` on one Qdrant Edge shard in ``path`` (created on first use)."""

    engine = "edge"

    def __init__(self, path: str, embedding_dim: int = 384, *, hnsw_m: int = 16, hnsw_ef_construct: int = 100,
                 hnsw_ef: int | None = None, exact_below: int = EXACT_BELOW, write_batch_size: int = 256,
                 return_embedding: bool = False, cache_size: int = 50_000) -> None:
        """
        :param path: the shard's folder (created with its parents when it holds no shard yet).
        :param embedding_dim: the dense vectors' dimension; a shard made for another dimension is refused.
        :param hnsw_m: edges per node of the HNSW graph; 0: never build one (every search exact).
        :param hnsw_ef_construct: the graph's build-time beam width (with ``hnsw_m`` > 0).
        :param hnsw_ef: the search-time beam width over the graph (a larger one: better recall, slower); ``None``:
            chosen by the number of articles (`edge_sizing.search_ef`: 512, 1024 from 300,000 articles on).
        :param exact_below: articles below which the shard has no graph and searches exactly; `optimize()` builds
            the graph once the shard holds this many.
        :param write_batch_size: points per engine update.
        :param return_embedding: whether documents come back with their vectors.
        :param cache_size: documents kept in memory for search results (least recently used dropped; 0: none).
            A search asks the engine for ids and scores and reads only the documents it has not seen.
        """
        if not str(path).strip():
            raise ValueError("QdrantEdgeDocumentStore needs a folder path")
        if embedding_dim < 1:
            raise ValueError(f"embedding_dim must be positive, got {embedding_dim}")
        if hnsw_m < 0 or hnsw_ef_construct < 1 or (hnsw_ef is not None and hnsw_ef < 1):
            raise ValueError(f"hnsw_m must be ≥ 0, hnsw_ef_construct and hnsw_ef ≥ 1, got {hnsw_m}, "
                             f"{hnsw_ef_construct} and {hnsw_ef}")
        if exact_below < 0 or cache_size < 0 or write_batch_size < 1:
            raise ValueError(f"exact_below and cache_size must be ≥ 0 and write_batch_size positive, got "
                             f"{exact_below}, {cache_size} and {write_batch_size}")
        self.path = str(path)
        self.embedding_dim = embedding_dim
        self.hnsw_m = hnsw_m
        self.hnsw_ef_construct = hnsw_ef_construct
        self.hnsw_ef = hnsw_ef
        self.exact_below = exact_below
        self.write_batch_size = write_batch_size
        self.return_embedding = return_embedding
        self.cache_size = cache_size
        self._config = shard_config(embedding_dim, hnsw_m, hnsw_ef_construct, exact_below)
        self._cache = DocumentCache(cache_size)
        self._preloaded = False
        self._sized_ef = (-1, HNSW_EF)  # (cache generation it was counted at, hnsw_ef by size)
        self._shard: edge.EdgeShard | None = None
        self._companions: dict[str, QdrantEdgeDocumentStore] = {}
        self._lock = threading.RLock()

    # -- the shard ------------------------------------------------------------------------------------------------

    @property
    def shard(self) -> edge.EdgeShard:
        """The open shard (opened, or created with the payload indexes, on first use)."""
        with self._lock:
            if self._shard is None:
                self._shard = self._open()
            return self._shard

    def _open(self) -> edge.EdgeShard:
        folder = Path(self.path)
        exists = (folder / CONFIG_FILE).exists()
        dense = stored_dense_size(folder / CONFIG_FILE)  # a shard made for other vectors is refused, not mixed
        if dense is not None and dense != self.embedding_dim:
            raise StoreConfigError(f"the knowledge base at {self.path} holds {dense}-dimensional vectors, not "
                             f"{self.embedding_dim}; delete it and re-index, or use the embedder it was made with")
        try:
            if not exists:
                folder.mkdir(parents=True, exist_ok=True)
                shard = edge.EdgeShard.create(self.path, self._config)
            else:  # this store's graph settings replace those on disk (the next `optimize()` applies them)
                shard = edge.EdgeShard.load(self.path, self._config)
        except Exception as error:  # the binding raises plain Exceptions with the engine's message
            if LOCKED_MARK in str(error):
                raise StoreLockedError(f"the knowledge base at {self.path} is in use by another process (or another "
                                       "store object); stop it or point this one at another folder") from None
            raise
        indexed = set(shard.info().payload_schema)
        for index in PAYLOAD_INDEXES:  # a shard made before an index was added gets it now
            field, schema = index["field_name"], index["field_schema"]
            if schema == "bool":  # booleans are matched through their integer twins (edge_filters.BOOL_TWINS)
                field, schema = bool_twin(field), "integer"
            if field not in indexed:
                shard.update(edge.UpdateOperation.create_field_index(field, INDEX_TYPES[schema]))
        return shard

    @property
    def knowledge_base(self) -> str:
        """The knowledge base's folder name (the shard sits in its ``documents`` folder, or is the folder itself)."""
        return self._folder.name

    @property
    def _folder(self) -> Path:
        return Path(self.path).parent if Path(self.path).name == DOCUMENTS else Path(self.path)

    @property
    def writes(self) -> int:
        """How many writes and deletes this store object has made (one owner per shard: every change to it)."""
        return self._cache.generation

    def open(self) -> None:
        """Open the shard now, not on first use (a second owner gets `StoreLockedError` here); free once open."""
        _ = self.shard

    def optimize(self) -> None:
        """Merge segments and, from ``exact_below`` articles on, build the HNSW graph (~10 s for 24,000 articles on 2
        cores: after a bulk write, not after each batch)."""
        self.shard.optimize()

    def companion(self, suffix: str) -> QdrantEdgeDocumentStore:
        """A payload-only store in the folder ``<path><suffix>`` beside this one (e.g. the source manifest's),
        opened once per store object and closed with it."""
        with self._lock:
            if suffix not in self._companions:
                self._companions[suffix] = QdrantEdgeDocumentStore(f"{self.path}{suffix}", embedding_dim=1,
                                                                   hnsw_m=0, cache_size=0)
            return self._companions[suffix]

    def source_records(self) -> EdgeRecords:
        """The source manifest's records: vector-less documents of the companion shard ``<path>__sources``."""
        return EdgeRecords(self.companion("__sources"))

    def drop(self) -> None:
        """Delete the knowledge base: close it and remove its folder (the shard's and its companions' files)."""
        self.close()
        for folder in {self._folder, Path(self.path), *(Path(f"{self.path}{suffix}") for suffix in self._companions)}:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        """Flush and release the shard and its companions (another process may then open them)."""
        with self._lock:
            for companion in self._companions.values():
                companion.close()
            if self._shard is not None:
                self._shard.flush()
                self._shard.close()
                self._shard = None

    # -- the DocumentStore protocol ---------------------------------------------------------------------------------

    def count_documents(self) -> int:
        return self.shard.count(edge.CountRequest(exact=True))

    def filter_documents(self, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[Document]:
        """The documents matching Haystack ``filters`` (all documents without), in point-id order; at most
        ``limit`` of them when given."""
        condition = edge_filter(qdrant_filter(filters))
        found: list[Document] = []
        offset = None
        while limit is None or len(found) < limit:
            page = SCROLL_PAGE if limit is None else min(SCROLL_PAGE, limit - len(found))
            records, offset = self.shard.scroll(edge.ScrollRequest(
                offset=offset, limit=page, filter=condition, with_payload=True, with_vector=self.return_embedding))
            found.extend(self._document(record) for record in records)
            if offset is None:
                break
        return found

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write ``documents``; ``NONE`` and ``FAIL`` raise `DuplicateDocumentError` for an id already stored (or
        repeated in the list), ``SKIP`` keeps the stored one, ``OVERWRITE`` replaces it. Returns how many were
        written."""
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            raise ValueError("write_documents() expects a list of Documents")
        chosen = to_write(documents, policy, lambda ids: {d.id for d in self.get_documents_by_id(ids)}, self.path)
        self._forget([d.id for d in chosen])
        for start in range(0, len(chosen), self.write_batch_size):
            batch = chosen[start:start + self.write_batch_size]
            self.shard.update(edge.UpdateOperation.upsert_points([to_point(document) for document in batch]))
        if chosen:
            self.shard.flush()
            self._forget([d.id for d in chosen])  # again: a search that read during the write kept nothing
        return len(chosen)

    def delete_documents(self, document_ids: list[str]) -> None:
        if document_ids:
            self._forget(document_ids)
            self.shard.update(edge.UpdateOperation.delete_points([convert_id(i) for i in document_ids]))
            self.shard.flush()
            self._forget(document_ids)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching Haystack ``filters``; how many (as Haystack's stores return)."""
        condition = edge_filter(qdrant_filter(filters))
        deleted = self.shard.count(edge.CountRequest(exact=True, filter=condition))
        self._cache.forget()
        self.shard.update(edge.UpdateOperation.delete_points_by_filter(condition))
        self.shard.flush()
        self._cache.forget()
        return deleted

    # -- point-level updates (`KnowledgeBaseStore`: what the indexer rewrites in place) ----------------------------

    def source_counts(self) -> dict[str, int]:
        """Articles per ``meta.source``, counted by the engine's facet."""
        response = self.shard.facet(edge.FacetRequest("meta.source", limit=SOURCE_FACET_LIMIT, exact=True))
        return {str(hit.value): hit.count for hit in response.hits}

    def scroll_sources(self, sources: set[str], size: int = 2048) -> Iterator[tuple[list[Any], list[Document]]]:
        """The stored articles of ``sources`` (content and meta) in batches, with their point ids."""
        condition = edge_filter(qdrant_filter({"field": "meta.source", "operator": "in", "value": sorted(sources)}))
        offset = None
        while True:
            records, offset = self.shard.scroll(edge.ScrollRequest(offset=offset, limit=size, filter=condition,
                                                                   with_payload=True, with_vector=False))
            if records:
                yield ([r.id for r in records],
                       [Document(content=r.payload.get("content"), meta=r.payload.get("meta") or {}) for r in records])
            if offset is None:
                return

    def set_metas(self, metas: list[tuple[Any, dict[str, Any]]]) -> None:
        """Replace the ``meta`` (and its boolean twins) of each point; text and vectors are kept."""
        self._cache.forget()
        for point_id, meta in metas:
            self.shard.update(edge.UpdateOperation.set_payload([point_id], {"meta": meta, BOOL_TWINS: twins(meta)}))
        self.shard.flush()
        self._cache.forget()

    def set_sparse(self, vectors: list[tuple[Any, SparseEmbedding]]) -> None:
        """Replace the BM25 (sparse) vector of each point; its dense vector and payload are kept."""
        if vectors:
            self.shard.update(edge.UpdateOperation.update_vectors([edge.PointVectors(point_id, {
                SPARSE_VECTORS_NAME: edge.SparseVector(list(v.indices), [float(x) for x in v.values])})
                for point_id, v in vectors]))
            self.shard.flush()

    def upsert(self, documents: list[Document]) -> None:
        """Write embedded documents, replacing those with the same ids."""
        self.write_documents(documents, policy=DuplicatePolicy.OVERWRITE)

    def _forget(self, document_ids: list[str]) -> None:
        """Drop these documents from the search cache (they are being rewritten or deleted)."""
        self._cache.forget(uuid.UUID(convert_id(i)) for i in document_ids)

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        if not ids:
            return []
        records = self.shard.retrieve([convert_id(i) for i in ids], with_payload=True,
                                      with_vector=self.return_embedding)
        return [self._document(record) for record in records]

    # -- queries the retrievers make ------------------------------------------------------------------------------

    def query_dense(self, embedding: list[float], top_k: int = 10, filters: dict[str, Any] | None = None,
                    exact: bool = False, hnsw_ef: int | None = None) -> list[Document]:
        """Nearest documents by cosine (``score``), best first: over the HNSW graph where the shard has one (with
        ``hnsw_ef``, default the store's), else (or with ``exact``) exactly."""
        if len(embedding) != self.embedding_dim:
            raise ValueError(f"query embedding has {len(embedding)} dimensions; the store holds {self.embedding_dim}")
        return self._query(edge.Query.Nearest(list(embedding), using=DENSE_VECTORS_NAME), top_k, filters,
                           edge.SearchParams(exact=exact, hnsw_ef=hnsw_ef or self.hnsw_ef or self._ef_by_size()))

    def _ef_by_size(self) -> int:
        generation = self._cache.generation  # bumped by every write and delete: recount only after one
        if self._sized_ef[0] != generation:
            self._sized_ef = (generation, search_ef(self.shard.count(edge.CountRequest(exact=False))))
        return self._sized_ef[1]

    def query_sparse(self, embedding: SparseEmbedding, top_k: int = 10,
                     filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents by the sparse dot product, the engine's IDF applied (BM25 over stored term weights)."""
        vector = edge.SparseVector(list(embedding.indices), [float(v) for v in embedding.values])
        return self._query(edge.Query.Nearest(vector, using=SPARSE_VECTORS_NAME), top_k, filters, None)

    def facet(self, key: str, limit: int, filters: dict[str, Any] | None = None) -> list[str]:
        """An indexed payload field's distinct values (e.g. ``meta.law``) in the documents ``filters`` match.
        Edge's facet index keeps a value whose points were all deleted or changed, with a count of 0: left out."""
        response = self.shard.facet(edge.FacetRequest(key, limit=limit, exact=True,
                                                      filter=edge_filter(qdrant_filter(filters))))
        return [str(hit.value) for hit in response.hits if hit.count > 0]

    def _query(self, query: Any, top_k: int, filters: dict[str, Any] | None,
               params: edge.SearchParams | None) -> list[Document]:
        if top_k < 1:
            raise ValueError(f"top_k must be positive, got {top_k}")
        fetch = self.return_embedding or not self.cache_size  # else ids and scores only; documents from the cache
        points = self.shard.query(edge.QueryRequest(
            limit=top_k, query=query, filter=edge_filter(qdrant_filter(filters)), params=params,
            with_payload=fetch, with_vector=self.return_embedding))
        if fetch:
            return [self._document(point) for point in points]
        return [replace(document, score=point.score)
                for point, document in zip(points, self._cache.get([point.id for point in points], self._read),
                                           strict=True)]

    def _read(self, point_ids: list[Any]) -> dict[Any, Document]:
        records = self.shard.retrieve(point_ids, with_payload=True, with_vector=False)
        return {record.id: self._document(record) for record in records}

    def preload(self) -> None:
        """Fill the search cache with the shard's documents (at most ``cache_size``), once per store object, so
        the first searches read no payloads (a cold query reads ~200: p50 86 ms against 35 ms warm on the statute
        corpus; 24,000 articles take a few seconds), the payload files read once, and warm the HNSW graph up."""
        with self._lock:
            if self._preloaded:
                return
            self._preloaded = True
        read_payloads(self.path)
        if self.cache_size:
            self._cache.fill(self._scroll_all)
        if self.hnsw_m and self.shard.count(edge.CountRequest(exact=False)) >= self.exact_below:
            warm_graph(self.shard, DENSE_VECTORS_NAME, self.embedding_dim, self.hnsw_ef or self._ef_by_size())

    def drop_cache(self) -> None:
        """Empty the search cache (memory back; the next `preload`, e.g. a pipeline's warm-up, fills it again)."""
        self._preloaded = False
        self._cache.forget()

    def _scroll_all(self, limit: int) -> Iterator[tuple[Any, Document]]:
        offset, read = None, 0
        while read < limit:
            records, offset = self.shard.scroll(edge.ScrollRequest(
                offset=offset, limit=min(SCROLL_PAGE, limit - read), with_payload=True, with_vector=False))
            read += len(records)
            yield from ((record.id, to_document(record)) for record in records)
            if offset is None:
                return

    def _document(self, point: Any) -> Document:
        return to_document(point, with_vector=self.return_embedding)

    # -- serialisation ---------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, path=self.path, embedding_dim=self.embedding_dim, hnsw_m=self.hnsw_m,
                               hnsw_ef_construct=self.hnsw_ef_construct, hnsw_ef=self.hnsw_ef,
                               exact_below=self.exact_below, write_batch_size=self.write_batch_size,
                               return_embedding=self.return_embedding, cache_size=self.cache_size)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QdrantEdgeDocumentStore:
        return default_from_dict(cls, data)

