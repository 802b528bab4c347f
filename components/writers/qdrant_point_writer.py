"""QdrantPointWriter: writes embedded documents to the knowledge base's store, overwriting documents with the same id.

Writes the same Qdrant points as `DocumentWriter(policy=DuplicatePolicy.OVERWRITE)` (payload, dense and sparse
vectors, point id) into either `KnowledgeBaseStore` (embedded Edge or a server), but builds them without running
`Document.to_dict()` over the vectors (`document_store.qdrant_store.to_points`, and the Edge store's own
writer): its recursive `dataclasses.asdict` copies every float of both embeddings one call at a time.
`tests/components/writers/test_qdrant_point_writer.py` checks that the points equal the library's for the same
documents.

Usage::

    from components.writers.qdrant_point_writer import QdrantPointWriter
    writer = QdrantPointWriter(document_store=store)
    writer.run(documents=embedded_docs)["documents_written"]
"""

from haystack import Document, component

from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.knowledge_bases import StoreComponentSerialization


@component
class QdrantPointWriter(StoreComponentSerialization):
    """Upserts documents (with their dense and sparse embeddings) in batches of the store's ``write_batch_size``.

    :param document_store: the store to write to (embedded path or server).
    """

    def __init__(self, document_store: KnowledgeBaseStore) -> None:
        self.document_store = document_store

    @component.output_types(documents_written=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        if bad := next((d for d in documents if not isinstance(d, Document)), None):
            raise ValueError(f"QdrantPointWriter expects Documents, got {type(bad).__name__}")
        if documents:
            self.document_store.upsert(documents)
        return {"documents_written": len(documents)}
