"""Opening knowledge bases from `Settings`: the one place that turns ``QDRANT_URL`` / ``QDRANT_PATH`` /
``COLLECTION`` / the embedding dimension into the plain arguments of `document_store.knowledge_bases`.

Usage::

    from pipelines.stores import open_document_store
    store = open_document_store(Settings.from_env())          # the default knowledge base (Qdrant Edge on disk)
    store = open_document_store(settings, "handbook")         # another one
"""

from __future__ import annotations

from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.knowledge_bases import open_store
from document_store.qdrant_store import StoreLocation


def store_location(settings: Settings) -> StoreLocation:
    """Where the settings put knowledge bases, with the server's timeout and sharding, and the HNSW settings."""
    return StoreLocation(url=settings.qdrant_url or None, path=None if settings.qdrant_url else settings.qdrant_path,
                         embedding_dim=settings.embedding_dim, timeout=settings.qdrant_timeout,
                         shards=settings.qdrant_shards, replicas=settings.qdrant_replicas,
                         hnsw_m=settings.qdrant_hnsw_m, hnsw_ef_construct=settings.qdrant_hnsw_ef_construct)


def open_document_store(settings: Settings, collection: str | None = None, *,
                        connect: bool = True) -> KnowledgeBaseStore:
    """Open (and create if needed) ``collection`` (default ``settings.collection``) where the settings say."""
    return open_store(store_location(settings), collection or settings.collection, connect=connect)
