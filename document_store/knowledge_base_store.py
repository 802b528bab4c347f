"""The one protocol of a knowledge-base store: what the retrievers, the indexer and the manifest ask of it.

Two classes implement it, both over Qdrant's engine and with the same point layout (qdrant-haystack's):
`QdrantEdgeDocumentStore` (the engine in this process, the embedded default) and `QdrantServerDocumentStore`
(qdrant-haystack's `QdrantDocumentStore` on a server, or on qdrant-client's local mode). Everything above the store
layer takes a `KnowledgeBaseStore` and calls these methods; nothing chooses code by the store's class.

Usage::

    from document_store.knowledge_base_store import KnowledgeBaseStore
    def best(store: KnowledgeBaseStore, embedding: list[float]) -> Document:
        store.open()
        return store.query_dense(embedding, top_k=1)[0]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy


class Records(Protocol):
    """Where a knowledge base's source manifest (`document_store.source_manifest`) keeps its records: one payload
    per source name (each store gives its own, `KnowledgeBaseStore.source_records`)."""

    def put(self, payloads: dict[str, dict[str, Any]]) -> None: ...  # source name -> payload, one write
    def get(self, source: str) -> dict[str, Any] | None: ...
    def all(self) -> list[dict[str, Any]]: ...
    def remove(self, source: str) -> None: ...
    def drop(self) -> None: ...


@runtime_checkable
class KnowledgeBaseStore(Protocol):
    """A knowledge base in Qdrant: Haystack's `DocumentStore` protocol and the statute system's own reads, queries
    and in-place rewrites. Point ids are what `scroll_sources` gives."""

    engine: str  # "edge" (in this process) or "qdrant" (a server, or qdrant-client's local mode)

    # -- lifetime ------------------------------------------------------------------------------------------------
    @property
    def knowledge_base(self) -> str:
        """The name it was opened under (a server's collection, an Edge store's knowledge-base folder)."""
        ...

    @property
    def writes(self) -> int | None:
        """How many changes this object has made (a search may cache by it); None where other processes write
        too (a server), so nothing can be cached for long."""
        ...

    def open(self) -> None:
        """Open (embedded) or connect (server) now, so that a locked store or a bad configuration shows up here."""
        ...

    def preload(self) -> None:
        """Bring what the first searches need into memory (a no-op where a server does it)."""
        ...

    def optimize(self) -> None:
        """After a bulk write: let the engine build its indexes (a no-op where it does so by itself)."""
        ...

    def close(self) -> None: ...

    def drop(self) -> None:
        """Delete the knowledge base: its documents, its manifest and, embedded, its files; closes the store."""
        ...

    # -- Haystack's DocumentStore protocol -------------------------------------------------------------------------
    def count_documents(self) -> int: ...

    def filter_documents(self, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[Document]:
        """The documents matching Haystack ``filters``; at most ``limit`` of them when given."""
        ...

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int: ...

    def delete_documents(self, document_ids: list[str]) -> None: ...

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching Haystack ``filters``; how many."""
        ...

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KnowledgeBaseStore:
        """The store `to_dict` describes (what a YAML pipeline holds)."""
        ...

    # -- queries the retrievers make -------------------------------------------------------------------------------
    def query_dense(self, embedding: list[float], top_k: int = 10,
                    filters: dict[str, Any] | None = None) -> list[Document]:
        """Nearest documents by cosine (``score``), best first."""
        ...

    def query_sparse(self, embedding: SparseEmbedding, top_k: int = 10,
                     filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents by the sparse dot product with the engine's IDF applied (BM25 over stored term weights)."""
        ...

    def facet(self, key: str, limit: int, filters: dict[str, Any] | None = None) -> list[str]:
        """An indexed payload field's distinct values (e.g. ``meta.law``) in the documents ``filters`` match."""
        ...

    # -- what the indexer rewrites in place ------------------------------------------------------------------------
    def source_counts(self) -> dict[str, int]:
        """Articles per ``meta.source``."""
        ...

    def scroll_sources(self, sources: set[str], size: int = 2048) -> Iterable[tuple[list[Any], list[Document]]]:
        """The stored articles of ``sources`` (content and meta) in batches, with their point ids."""
        ...

    def set_metas(self, metas: list[tuple[Any, dict[str, Any]]]) -> None:
        """Replace the ``meta`` of each point (its text and vectors kept)."""
        ...

    def set_sparse(self, vectors: list[tuple[Any, SparseEmbedding]]) -> None:
        """Replace the BM25 (sparse) vector of each point (its dense vector and payload kept)."""
        ...

    def upsert(self, documents: list[Document]) -> None:
        """Write embedded documents, replacing those with the same ids."""
        ...

    def source_records(self) -> Records:
        """Where this knowledge base's source manifest keeps its records (`document_store.source_manifest`)."""
        ...
