"""DenseRetriever: embeds each query and searches the dense vectors; one ranking per query.

The search runs in the store's own engine (`components.retrievers.store_search`): Qdrant Edge in this process, or a
Qdrant server, where the store's `query_dense` (`document_store.qdrant_store`) has the server search.

Usage::

    from components.retrievers.dense_retriever import DenseRetriever
    retriever = DenseRetriever(document_store=store, embedder=text_embedder(settings), top_k=10)
    retriever.warm_up()
    rankings = retriever.run(queries=["公司收集个人信息需要同意吗"])["rankings"]
"""


from typing import Any

from haystack import Document, component, default_to_dict
from haystack.core.serialization import (
    component_from_dict,
    component_to_dict,
    generate_qualified_class_name,
    import_class_by_name,
)

from components.embedders.onnx_text_embedder import OnnxTextEmbedder
from components.retrievers.store_search import SearchingComponent, shown_as_amended
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.knowledge_bases import from_dict_sharing_store
from helpers.records.ranking import Ranking
from helpers.statutes.versions import with_versions


@component
class DenseRetriever(SearchingComponent):
    """Query embedding (the embedder adds the model's query prefix) + nearest neighbours in the store.

    :param document_store: the store written by the indexing pipeline.
    :param embedder: a text embedder configured like the indexing side's document embedder (`OnnxTextEmbedder`,
        or Haystack's ``SentenceTransformersTextEmbedder``: any component whose ``run(text)`` returns ``embedding``).
    :param top_k: documents per query.
    :param filters: Haystack metadata filters applied to every query (overridable in `run`).
    """

    def __init__(
        self,
        document_store: KnowledgeBaseStore,
        embedder: Any,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> None:
        self._bind_search(document_store, top_k, filters)
        self.embedder = embedder

    def warm_up(self) -> None:
        self.embedder.warm_up()
        SearchingComponent.warm_up(self)  # (@component rebuilds the class: no zero-argument super())

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
        embedder = params["embedder"]  # this repo's ONNX embedder, or one of Haystack's (allowed by its allowlist)
        kind = OnnxTextEmbedder if embedder["type"] == generate_qualified_class_name(OnnxTextEmbedder) else (
            import_class_by_name(embedder["type"]))
        params["embedder"] = component_from_dict(kind, embedder, "embedder")
        return from_dict_sharing_store(cls, data)

    @component.output_types(documents=list[Document], rankings=list[Ranking])
    def run(
        self, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None,
        as_of: str | None = None,
    ) -> dict[str, Any]:
        """Retrieve for each query, from the statutes in force (on ``as_of``, ``YYYY-MM-DD``, when given); an
        amendment found stands as the article it amends (`shown_as_amended`).

        :returns: ``documents`` (the first query's ranking) and ``rankings`` (one per query)."""
        active = with_versions(filters if filters is not None else self.filters, as_of)
        top_k = top_k or self.top_k
        rankings = []
        for query in queries:
            embedding = self.embedder.run(text=query)["embedding"]
            hits = self._search.dense(embedding, top_k, active)
            rankings.append(Ranking("dense", query, shown_as_amended(self._search, hits, active)))
        return {"documents": rankings[0].documents if rankings else [], "rankings": rankings}
