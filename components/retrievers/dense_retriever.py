"""DenseRetriever: embeds each query and searches the dense vectors; one ranking per query.

With the embedded store the search runs on the in-process `CollectionMirror` (exact cosine, as embedded Qdrant
does); with a Qdrant server it uses `QdrantEmbeddingRetriever`.

Usage::

    from components.retrievers.dense_retriever import DenseRetriever
    retriever = DenseRetriever(document_store=store, embedder=text_embedder(settings), top_k=10)
    retriever.warm_up()
    rankings = retriever.run(queries=["公司收集个人信息需要同意吗"])["rankings"]
"""


from dataclasses import replace
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.utils.filters import document_matches_filter
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder
from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from document_store.collection_mirror import mirror_for
from document_store.qdrant_store import from_dict_sharing_store
from helpers.ranking import Ranking


@component
class DenseRetriever:
    """Query embedding (the embedder adds the model's query prefix) + `QdrantEmbeddingRetriever`.

    :param document_store: the store written by the indexing pipeline.
    :param embedder: a text embedder configured like the indexing side's document embedder.
    :param top_k: documents per query.
    :param filters: Haystack metadata filters applied to every query (overridable in `run`).
    """

    def __init__(
        self,
        document_store: QdrantDocumentStore,
        embedder: SentenceTransformersTextEmbedder,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.document_store = document_store
        self.embedder = embedder
        self.top_k = top_k
        self.filters = filters
        self._retriever = QdrantEmbeddingRetriever(document_store=document_store, top_k=top_k)

    def warm_up(self) -> None:
        self.embedder.warm_up()

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            embedder=component_to_dict(self.embedder, "embedder"),
            top_k=self.top_k,
            filters=self.filters,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseRetriever":
        params = data["init_parameters"]
        params["embedder"] = component_from_dict(SentenceTransformersTextEmbedder, params["embedder"], "embedder")
        return from_dict_sharing_store(cls, data)

    @component.output_types(documents=list[Document], rankings=list[Ranking])
    def run(
        self, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """:returns: ``documents`` (the first query's ranking) and ``rankings`` (one per query)."""
        active = filters if filters is not None else self.filters
        top_k = top_k or self.top_k
        rankings = []
        for query in queries:
            embedding = self.embedder.run(text=query)["embedding"]
            if self.document_store.path or self.document_store.location == ":memory:":
                accept = (lambda doc: document_matches_filter(active, doc)) if active else None
                hits = mirror_for(self.document_store).dense(embedding, top_k, accept)
                docs = [replace(doc, score=score) for doc, score in hits]
            else:  # a Qdrant server searches its own index
                docs = self._retriever.run(query_embedding=embedding, top_k=top_k, filters=active)["documents"]
            rankings.append(Ranking("dense", query, docs))
        return {"documents": rankings[0].documents if rankings else [], "rankings": rankings}
