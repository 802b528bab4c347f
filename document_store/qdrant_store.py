"""Qdrant servers (``QDRANT_URL``): where knowledge bases live, and the `KnowledgeBaseStore` on one
(`QdrantServerDocumentStore`, qdrant-haystack's `QdrantDocumentStore` with the statute store's methods).

The opener takes plain arguments (no settings object): `pipelines.stores.open_document_store` is the one that
reads them from `Settings`, and `document_store.knowledge_bases.open_store` chooses between a server and the
embedded Qdrant Edge store.

Usage::

    from document_store.qdrant_store import StoreLocation, open_qdrant_store
    store = open_qdrant_store(StoreLocation(url="http://localhost:6333"), "statutes")
    print(store.count_documents())

Bad configuration (an unreachable server, a wrong API key, a collection made for other vectors) raises
`StoreConfigError` with a one-line message that says what to do.

Where qdrant-haystack has no public method, its private ones are used, each in one place: `_query_by_embedding`
and `_query_by_sparse` (what its own retrievers call: the store has no public query), and `_initialize_client` /
`_client` in `qdrant_client_of` (its public ``client`` property counts the documents on every call).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
from haystack import Document, logging
from haystack.dataclasses import SparseEmbedding
from haystack.utils import Secret
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.converters import (
    convert_id,
    convert_qdrant_point_to_haystack_document,
)
from haystack_integrations.document_stores.qdrant.document_store import (
    DENSE_VECTORS_NAME,
    SPARSE_VECTORS_NAME,
    QdrantStoreError,
)
from qdrant_client import QdrantClient
from qdrant_client.http import models as rest
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException, UnexpectedResponse

from document_store.collection_records import CollectionRecords
from document_store.errors import StoreConfigError
from document_store.payload_indexes import PAYLOAD_INDEXES, SOURCE_FACET_LIMIT
from document_store.qdrant_filters import qdrant_filter
from helpers.checks.user_text import shown

logger = logging.getLogger(__name__)

COLLECTION_NAME_RE = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
API_KEY_ENV = "QDRANT_API_KEY"
REINDEX = "delete it and re-index with `python -m pipelines index`"


def validate_collection_name(name: str) -> str:
    """Knowledge-base names become Qdrant collection names: letters, digits, ``_`` and ``-`` only."""
    if not isinstance(name, str) or not COLLECTION_NAME_RE.fullmatch(name) or name.endswith("__sources"):
        raise ValueError(
            f"Invalid knowledge base name {shown(name)}: use 1-64 letters, digits, '_' or '-' (not ending in "
            "'__sources')"
        )
    return name


@dataclass(frozen=True)
class StoreLocation:
    """Where knowledge bases live: a Qdrant server (``url``) or a folder holding one embedded store per collection
    (``path``), and the dimension of their dense vectors."""

    url: str | None = None
    path: Path | None = None
    embedding_dim: int = 384
    timeout: int = 30  # seconds per request to a server
    shards: int = 1  # for collections a server creates
    replicas: int = 1
    hnsw_m: int = 16  # 0: no HNSW graph (exact search)
    hnsw_ef_construct: int = 100

    def __post_init__(self) -> None:
        if not self.url and self.path is None:
            raise ValueError("a store location needs a Qdrant url or an embedded path")


def server_client_params(location: StoreLocation) -> dict[str, Any]:
    """How this application talks to a Qdrant server: the url, the API key (read from ``QDRANT_API_KEY`` when
    a client is made, never stored) and the request timeout; both the store and `list_collections` use these."""
    assert location.url, "an embedded location has no server"
    return {"url": location.url, "api_key": Secret.from_env_var(API_KEY_ENV, strict=False),
            "timeout": location.timeout}


def open_qdrant_store(location: StoreLocation, collection: str, *,
                      connect: bool = True) -> QdrantServerDocumentStore:
    """The server's collection (created if needed) as a `QdrantServerDocumentStore`.

    ``connect=False`` only builds the object (for serialising pipelines without reaching the server).
    """
    assert location.url, "an embedded location is opened by document_store.knowledge_bases"
    store = QdrantServerDocumentStore(
        **server_client_params(location), index=validate_collection_name(collection),
        embedding_dim=location.embedding_dim, use_sparse_embeddings=True, sparse_idf=True, similarity="cosine",
        return_embedding=False, progress_bar=False, write_batch_size=256, shard_number=location.shards,
        replication_factor=location.replicas,
        hnsw_config={"m": location.hnsw_m, "ef_construct": location.hnsw_ef_construct},
        payload_fields_to_index=PAYLOAD_INDEXES)
    if connect:
        connect_qdrant_store(store)
    return store


def list_collections(location: StoreLocation) -> list[str]:
    """The server's knowledge bases (its collections, manifests left out)."""
    params = server_client_params(location)
    client = QdrantClient(**{**params, "api_key": params["api_key"].resolve_value()})
    try:
        names = [c.name for c in client.get_collections().collections]
    except ApiException as error:
        raise StoreConfigError(_server_problem(location.url, location.timeout, error) or str(error)) from error
    finally:
        client.close()
    return sorted(n for n in names if not n.endswith("__sources"))


def connect_qdrant_store(store: QdrantDocumentStore) -> None:
    """Connect now (and create the collection if needed), so that a bad configuration shows up here."""
    try:
        store.count_documents()
        problem = _collection_problem(store)
    except (ValueError, QdrantStoreError, ApiException) as error:
        problem = _server_problem(store.url, store.timeout, error) if store.url else None
        if problem is None:
            try:
                problem = _collection_problem(store)
            except Exception:  # noqa: BLE001 - the original error says more than a failed inspection
                problem = None
        store.close()  # a half-set-up client would skip the collection checks next time
        if problem is None:
            raise
        logger.debug("store configuration error: {error}", error=error)
        raise StoreConfigError(problem) from error
    if problem is not None:
        store.close()
        raise StoreConfigError(problem)


def _server_problem(url: str, timeout: int | None, error: BaseException) -> str | None:
    """The one-line message for a server that cannot be reached or refuses us, from the error or its causes."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, UnexpectedResponse):
            return _http_problem(url, seen)
        if isinstance(seen, ResponseHandlingException):
            source = seen.source
            if isinstance(source, httpx.TimeoutException):
                return (f"The Qdrant server at {url} did not answer within {timeout} s (QDRANT_TIMEOUT); "
                        "check that it is running, or raise QDRANT_TIMEOUT.")
            return (f"Cannot reach the Qdrant server at {url} ({_one_line(source)}); "
                    "start it or unset QDRANT_URL to use the embedded store.")
        seen = seen.__cause__ or seen.__context__
    return None


def _http_problem(url: str, error: UnexpectedResponse) -> str:
    code = error.status_code
    if code in (401, 403):
        if not Secret.from_env_var(API_KEY_ENV, strict=False).resolve_value():
            return f"The Qdrant server at {url} requires an API key (HTTP {code}); set QDRANT_API_KEY."
        return (f"The Qdrant server at {url} rejected QDRANT_API_KEY (HTTP {code}); "
                "set it to the server's API key.")
    try:
        detail = error.structured()["status"]["error"]
    except (ValueError, KeyError, TypeError):
        detail = error.reason_phrase
    return (f"The Qdrant server at {url} answered HTTP {code} ({_one_line(detail)}); "
            "check that QDRANT_URL points at a Qdrant server.")


def _collection_problem(store: QdrantDocumentStore) -> str | None:
    """Why an existing collection cannot serve this application (dense size, distance, the BM25 sparse vector)."""
    assert store._client is not None
    name = store.index
    params = store._client.get_collection(name).config.params
    vectors = params.vectors
    dense = vectors.get(DENSE_VECTORS_NAME) if isinstance(vectors, dict) else vectors
    if dense is None:
        return (f"Collection '{name}' was not made by this application (no '{DENSE_VECTORS_NAME}' vector); "
                f"use another collection name, or {REINDEX}.")
    if dense.size != store.embedding_dim:
        return (f"Collection '{name}' has {dense.size}-d vectors but EMBEDDING_DIM is {store.embedding_dim}; "
                f"set EMBEDDING_DIM (and EMBEDDING_MODEL) to match, or {REINDEX}.")
    if dense.distance != rest.Distance.COSINE:
        return f"Collection '{name}' uses {dense.distance.value} distance, not Cosine; {REINDEX}."
    sparse = (params.sparse_vectors or {}).get(SPARSE_VECTORS_NAME) if isinstance(vectors, dict) else None
    if sparse is None:
        return (f"Collection '{name}' has no '{SPARSE_VECTORS_NAME}' vector (created without sparse embeddings), "
                f"so it cannot hold BM25; {REINDEX}.")
    if sparse.modifier != rest.Modifier.IDF:
        return (f"Collection '{name}' has sparse vectors without the IDF modifier, so BM25 would score wrongly; "
                f"{REINDEX}.")
    return None


def _one_line(value: object) -> str:
    return " ".join(str(value).split())[:200]


def qdrant_client_of(store: QdrantDocumentStore) -> QdrantClient:
    """The store's own client, made (and the collection set up) on first use; no request after that (it counted the
    documents on every call before: one round trip more per search on a server)."""
    store._initialize_client()
    client = store._client
    assert client is not None
    return client


class QdrantServerDocumentStore(QdrantDocumentStore):
    """qdrant-haystack's `QdrantDocumentStore` as a `KnowledgeBaseStore`: a collection on a Qdrant server (or in
    qdrant-client's local mode) that answers the queries, facets and in-place rewrites the embedded Edge store
    answers, through its client. Opened by `open_qdrant_store`; takes `QdrantDocumentStore`'s arguments.

    Usage::

        store = open_qdrant_store(StoreLocation(url="http://localhost:6333"), "statutes")
        store.query_sparse(SparseEmbedding(indices=[7], values=[1.0]), top_k=5)
    """

    engine = "qdrant"

    @property
    def knowledge_base(self) -> str:
        return self.index

    @property
    def writes(self) -> None:
        """None: other processes write to a server too."""
        return None

    @property
    def client(self) -> QdrantClient:
        """The store's own client (made, and the collection created, on first use)."""
        return qdrant_client_of(self)

    def open(self) -> None:
        """Connect and check the collection (`connect_qdrant_store`) once; again after `close`."""
        if self._client is None:
            connect_qdrant_store(self)

    def preload(self) -> None:
        """Nothing: a server keeps its own caches."""

    def optimize(self) -> None:
        """Nothing: a server's optimizer runs by itself."""

    def drop(self) -> None:
        self.source_records().drop()
        self.client.delete_collection(self.index)
        self.close()

    def source_records(self) -> CollectionRecords:
        return CollectionRecords(self.client, f"{self.index}__sources")

    def filter_documents(self, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[Document]:
        """The documents matching Haystack ``filters``; at most ``limit`` of them (one request) when given."""
        if limit is None:
            return super().filter_documents(qdrant_filter(filters))
        points = self.client.query_points(self.index, query_filter=qdrant_filter(filters), limit=limit,
                                          with_payload=True, with_vectors=False).points
        return [convert_qdrant_point_to_haystack_document(p, use_sparse_embeddings=self.use_sparse_embeddings)
                for p in points]

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching Haystack ``filters`` (as the Edge store reads them); how many."""
        condition = qdrant_filter(filters)
        if condition is None:
            return 0
        deleted = self.client.count(self.index, count_filter=condition, exact=True).count
        self.client.delete(self.index, points_selector=rest.FilterSelector(filter=condition),
                           wait=self.wait_result_from_api)
        return deleted

    def query_dense(self, embedding: list[float], top_k: int = 10,
                    filters: dict[str, Any] | None = None) -> list[Document]:
        return self._query_by_embedding(query_embedding=embedding, filters=qdrant_filter(filters), top_k=top_k)

    def query_sparse(self, embedding: SparseEmbedding, top_k: int = 10,
                     filters: dict[str, Any] | None = None) -> list[Document]:
        return self._query_by_sparse(query_sparse_embedding=embedding, filters=qdrant_filter(filters),
                                     top_k=top_k)

    def facet(self, key: str, limit: int, filters: dict[str, Any] | None = None) -> list[str]:
        hits = self.client.facet(self.index, key=key, facet_filter=qdrant_filter(filters), limit=limit,
                                 exact=True).hits
        return [str(hit.value) for hit in hits]

    def source_counts(self) -> dict[str, int]:
        hits = self.client.facet(self.index, key="meta.source", limit=SOURCE_FACET_LIMIT, exact=True).hits
        return {str(hit.value): hit.count for hit in hits}

    def scroll_sources(self, sources: set[str], size: int = 2048) -> Iterator[tuple[list[Any], list[Document]]]:
        """The server filters (``meta.source`` is a payload index): only the sources' points travel."""
        condition = qdrant_filter({"field": "meta.source", "operator": "in", "value": sorted(sources)})
        offset = None
        while True:
            points, offset = self.client.scroll(self.index, limit=size, offset=offset, with_payload=True,
                                                with_vectors=False, scroll_filter=condition)
            chosen = [p for p in points if p.payload]
            if chosen:
                yield ([p.id for p in chosen],
                       [Document(content=p.payload.get("content"), meta=p.payload.get("meta") or {}) for p in chosen])
            if offset is None:
                return

    def set_metas(self, metas: list[tuple[Any, dict[str, Any]]]) -> None:
        if metas:
            self.client.batch_update_points(self.index, wait=True, update_operations=[
                rest.SetPayloadOperation(set_payload=rest.SetPayload(payload={"meta": meta}, points=[point_id]))
                for point_id, meta in metas])

    def set_sparse(self, vectors: list[tuple[Any, SparseEmbedding]]) -> None:
        if vectors:
            self.client.update_vectors(self.index, wait=True, points=[
                rest.PointVectors(id=point_id, vector={SPARSE_VECTORS_NAME: rest.SparseVector(
                    indices=list(vector.indices), values=list(vector.values))}) for point_id, vector in vectors])

    def upsert(self, documents: list[Document]) -> None:
        for start in range(0, len(documents), self.write_batch_size):
            self.client.upsert(collection_name=self.index, wait=self.wait_result_from_api,
                               points=to_points(documents[start:start + self.write_batch_size],
                                                self.use_sparse_embeddings))


def to_points(documents: list[Document], use_sparse_embeddings: bool) -> list[rest.PointStruct]:
    """The points `QdrantDocumentStore.write_documents` makes of ``documents``, without running
    ``Document.to_dict()`` over the vectors (its recursive ``dataclasses.asdict`` copies every float of both
    embeddings one call at a time: 5.7 s against 0.7 s for 4,096 articles). The payload is the document without its
    vectors (``to_dict(flatten=False)``), the vectors are copied as they are."""
    points = []
    for doc in documents:
        payload = replace(doc, embedding=None, sparse_embedding=None).to_dict(flatten=False)
        del payload["embedding"]
        sparse = doc.sparse_embedding
        vector: Any
        if use_sparse_embeddings:
            del payload["sparse_embedding"]
            vector = {DENSE_VECTORS_NAME: list(doc.embedding)} if doc.embedding is not None else {}
            if sparse is not None:
                vector[SPARSE_VECTORS_NAME] = rest.SparseVector(indices=list(sparse.indices),
                                                                values=list(sparse.values))
        else:
            payload["sparse_embedding"] = sparse.to_dict() if sparse is not None else None
            vector = list(doc.embedding) if doc.embedding else {}
        points.append(rest.PointStruct(id=convert_id(doc.id), vector=vector, payload=payload))
    return points
