"""JiebaBM25Retriever: BM25 keyword recall with jieba segmentation over the BM25 weights stored in Qdrant.

Usage::

    from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever

    retriever = JiebaBM25Retriever(document_store=store, top_k=10)
    result = retriever.run(queries=["公司收集个人信息需要同意吗"])
    for doc in result["documents"]:
        print(doc.meta["key"], doc.score)
"""


from typing import Any

from haystack import Document, component, default_to_dict

from components.retrievers.store_search import SearchingComponent, shown_as_amended
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.knowledge_bases import from_dict_sharing_store
from helpers.records.ranking import Ranking
from helpers.statutes.versions import with_versions
from helpers.text_encoding.jieba_tokenizer import DEFAULT_CHAR_NGRAMS, JiebaTokenizer


@component
class JiebaBM25Retriever(SearchingComponent):
    """Scores documents with Lucene BM25 over jieba terms; one ranking per query.

    The document side of BM25 (k1, b, length normalisation) is written by `JiebaBM25DocumentEncoder` at
    indexing time as Qdrant sparse vectors; a query sends its terms' counts and the store's IDF modifier does
    the rest, in the store's own engine (`components.retrievers.store_search`: Qdrant Edge in this process, or a Qdrant
    server). Query and documents must use the same jieba ``mode`` and ``user_dict``.

    :param document_store: the store the indexing pipeline wrote (Qdrant Edge, or a Qdrant server).
    :param top_k: documents per query.
    :param mode: jieba mode, ``search`` or ``accurate``.
    :param user_dict: jieba user dictionary path; ``None`` = the bundled legal terms.
    :param stopwords: stopword list path; ``None`` = the bundled list, ``""`` = none.
    :param char_ngrams: character n-gram sizes indexed besides the words (default unigrams and bigrams;
        ``[]`` = words only; must match the document encoder's).
    :param filters: Haystack metadata filters applied to every query (overridable in `run`).
    """

    def __init__(
        self,
        document_store: KnowledgeBaseStore,
        top_k: int = 10,
        mode: str = "search",
        user_dict: str | None = None,
        stopwords: str | None = None,
        char_ngrams: list[int] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> None:
        self._bind_search(document_store, top_k, filters)
        self.mode = mode
        self.user_dict = user_dict
        self.stopwords = stopwords
        self.char_ngrams = list(DEFAULT_CHAR_NGRAMS) if char_ngrams is None else list(char_ngrams)
        self._tokenizer = JiebaTokenizer(mode=mode, user_dict=user_dict, stopwords=stopwords,
                                         char_ngrams=self.char_ngrams)

    def to_dict(self) -> dict[str, Any]:
        init = {k: getattr(self, k) for k in ("top_k", "mode", "user_dict", "stopwords", "char_ngrams", "filters")}
        return default_to_dict(self, document_store=self.document_store.to_dict(), **init)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "JiebaBM25Retriever":
        return from_dict_sharing_store(cls, data)

    def tokenize(self, text: str) -> list[str]:
        return self._tokenizer.tokenize(text)

    @component.output_types(documents=list[Document], rankings=list[Ranking])
    def run(
        self, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None,
        as_of: str | None = None,
    ) -> dict[str, Any]:
        """Retrieve for each query, from the statutes in force (on ``as_of``, ``YYYY-MM-DD``, when given); an
        amendment found stands as the article it amends (`shown_as_amended`).

        :returns: ``documents`` (the first query's ranking, scores set) and ``rankings`` (one per query).
        """
        top_k = top_k or self.top_k
        active = with_versions(filters if filters is not None else self.filters, as_of)
        rankings = [Ranking("bm25", query, shown_as_amended(
            self._search, self._search.bm25(self.tokenize(query), top_k, active), active)) for query in queries]
        return {"documents": rankings[0].documents if rankings else [], "rankings": rankings}
