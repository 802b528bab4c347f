"""How the retrievers search a knowledge base: `StoreSearch` over any `KnowledgeBaseStore` (Qdrant's engine answers, in
this process or on a server), and the statute logic above the engine: articles by key in their in-force version
(`held_articles`), law names kept fresh (`LawNames`), an amendment shown as the article it amends
(`shown_as_amended`).

Usage::

    from components.retrievers.store_search import StoreSearch
    search = StoreSearch(store)
    search.bm25(["个人信息", "同意"], top_k=10)        # [Document, ...] with scores
    search.articles(["中华人民共和国民法典第一千零三十二条"])
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from haystack import Document

from document_store.knowledge_base_store import KnowledgeBaseStore
from helpers.statutes.labels import VERSION_SEP, key_law
from helpers.text_encoding.sparse_terms import query_vector

FACET_LIMIT = 100_000  # distinct values of a field (law names, version dates) a knowledge base may hold
MAX_VERSIONS = 8  # versions of one article a citation lookup reads before the filter picks one
LAWS_RECHECK_SECONDS = 5.0  # how stale a server's law names may be (another process may index meanwhile)


class StoreSearch:
    """What the retrievers ask of a knowledge base: BM25 over the stored weights (a sparse query; the engine applies
    the IDF), dense nearest neighbours, articles by key, the laws present, whether a filter matches anything and
    which values a field takes. Filters go to the engine on every path."""

    def __init__(self, store: KnowledgeBaseStore) -> None:
        self.store = store
        self._laws = LawNames(lambda: self.values("meta.law"), lambda: store.writes)

    def warm_up(self) -> None:
        self.store.open()  # a pipeline warms its components up on every run: both are free after the first call
        self.store.preload()

    def bm25(self, terms: list[str], top_k: int, filters: dict[str, Any] | None = None) -> list[Document]:
        vector = query_vector(terms)
        return self.store.query_sparse(vector, top_k=top_k, filters=filters) if vector is not None else []

    def dense(self, embedding: list[float], top_k: int, filters: dict[str, Any] | None = None) -> list[Document]:
        return self.store.query_dense(embedding, top_k=top_k, filters=filters)

    def articles(self, keys: list[str], filters: dict[str, Any] | None = None) -> list[Document]:
        return held_articles(keys, filters, lambda condition, limit: self.store.filter_documents(condition, limit))

    def laws(self) -> list[str]:
        return self._laws.names()

    def holds(self, filters: dict[str, Any]) -> bool:
        """Whether any document matches ``filters`` (one point read at most)."""
        return bool(self.store.filter_documents(filters, limit=1))

    def values(self, key: str, filters: dict[str, Any] | None = None) -> list[str]:
        """The distinct values of the indexed field ``key`` among the documents ``filters`` match (a facet)."""
        return self.store.facet(key, FACET_LIMIT, filters)


class LawNames:
    """The distinct law names of a knowledge base, read by ``facet``: again whenever ``written`` (a count of the
    store's writes) has changed, or, where it gives None, every few seconds (a server that other processes write
    to)."""

    def __init__(self, facet: Callable[[], list[str]], written: Callable[[], int | None]) -> None:
        self._facet = facet
        self._written = written
        self._names: list[str] = []
        self._read: float | None = None  # when the names were last read (monotonic seconds)
        self._read_at: int | None = None  # ``written()`` when they were
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        with self._lock:
            written = self._written()
            stale = (written != self._read_at if written is not None else
                     self._read is not None and time.monotonic() - self._read > LAWS_RECHECK_SECONDS)
            if self._read is None or stale:
                self._names = sorted(self._facet())
                self._read, self._read_at = time.monotonic(), written
            return self._names


def held_articles(keys: list[str], filters: dict[str, Any] | None,
                  matching: Callable[[dict[str, Any], int], list[Document]]) -> list[Document]:
    """The articles ``keys`` name, in that order (the in-force version where several are held), from
    ``matching(filter, limit)``: the documents a payload filter selects in a Qdrant backend."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return []
    wanted: dict[str, Any] = {"operator": "OR", "conditions": [{"field": "meta.key", "operator": "in",
                                                               "value": keys}] + _version_conditions(keys)}
    condition = {"operator": "AND", "conditions": [wanted, filters]} if filters else wanted
    by_key: dict[str, Document] = {}
    for doc in matching(condition, MAX_VERSIONS * len(keys)):
        key = str(doc.meta.get("key", "")).split(VERSION_SEP)[0]
        if key not in by_key or doc.meta.get("key") == key:  # the in-force version first
            by_key[key] = doc
    return [replace(by_key[key], score=None) for key in keys if key in by_key]


def _version_conditions(keys: list[str]) -> list[dict[str, Any]]:
    """Payload conditions that match every version of the articles ``keys`` name (older versions' keys carry a
    date suffix, so they are found by law and article number)."""
    conditions = []
    for key in keys:
        law = key_law(key)
        if law != key:
            conditions.append({"operator": "AND", "conditions": [
                {"field": "meta.law", "operator": "==", "value": law},
                {"field": "meta.article_no", "operator": "==", "value": key[len(law):]}]})
    return conditions


def shown_as_amended(search: StoreSearch, documents: list[Document], filters: dict[str, Any] | None) -> list[Document]:
    """A ranking in which an amending article found by a search (meta ``amends``: "将刑法第二百六十四条修改为…")
    stands as the article it amends, in its place and with its score (``found_via`` names the amendment); an
    article that appears twice keeps its first place. Amendments whose article is not held stay as they are."""
    targets = [key for doc in documents for key in doc.meta.get("amends") or []]
    if not targets:
        return documents
    found = {doc.meta["key"].split(VERSION_SEP)[0]: doc for doc in search.articles(targets, filters)}
    shown: list[Document] = []
    seen: set[str] = set()
    for doc in documents:
        amended = [found[key] for key in doc.meta.get("amends") or [] if key in found]
        for item in amended or [doc]:
            key = str(item.meta.get("key"))
            if key in seen:
                continue
            seen.add(key)
            shown.append(doc if item is doc else
                         replace(item, score=doc.score, meta={**item.meta, "found_via": doc.meta.get("key")}))
    return shown


class SearchingComponent:
    """What the retrievers share: the store, its `StoreSearch`, ``top_k`` (>= 1) and default ``filters``;
    ``warm_up`` opens the store (connects, or loads the engine)."""

    document_store: KnowledgeBaseStore
    _search: StoreSearch

    def _bind_search(self, document_store: KnowledgeBaseStore, top_k: int | None = None,
                     filters: dict[str, Any] | None = None) -> None:
        if top_k is not None:
            if top_k < 1:
                raise ValueError(f"top_k must be >= 1, got {top_k}")
            self.top_k = top_k
            self.filters = filters
        self.document_store = document_store
        self._search = StoreSearch(document_store)

    def warm_up(self) -> None:
        self._search.warm_up()
