"""Copying a collection into a Qdrant Edge shard, vectors and all (nothing is re-embedded).

A store made by qdrant-client's local mode (or a server collection) is read page by page with its dense and
sparse vectors and written into a `QdrantEdgeDocumentStore` in the same layout; ids, payloads and vectors are
kept, so the copy answers every query as the source does.

Usage::

    from document_store.edge_migration import copy_into_edge
    copied = copy_into_edge(local_store, QdrantEdgeDocumentStore(path="data/edge/statutes"), progress=True)
"""

from __future__ import annotations

from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.converters import convert_qdrant_point_to_haystack_document
from tqdm import tqdm

from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.qdrant_store import qdrant_client_of

PAGE = 512


def copy_into_edge(source: QdrantDocumentStore, target: QdrantEdgeDocumentStore, progress: bool = False) -> int:
    """Copy every point of ``source`` into ``target`` (overwriting points with the same ids), then let ``target``
    build its HNSW graph (when it holds enough articles for one); returns how many were copied."""
    client = qdrant_client_of(source)
    total = client.count(source.index, exact=True).count
    copied, offset = 0, None
    with tqdm(total=total, desc="copying into Qdrant Edge", unit="article", disable=not progress) as bar:
        while True:
            points, offset = client.scroll(source.index, limit=PAGE, offset=offset, with_payload=True,
                                           with_vectors=True)
            documents = [convert_qdrant_point_to_haystack_document(p, use_sparse_embeddings=True) for p in points]
            copied += target.write_documents(documents, policy=DuplicatePolicy.OVERWRITE)
            bar.update(len(points))
            if offset is None:
                break
    target.optimize()
    return copied
