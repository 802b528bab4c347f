"""A source manifest's records as vector-less documents of an Edge store (the companion shard
``<path>__sources``): the `Records` of `QdrantEdgeDocumentStore`.

Usage::

    records = EdgeRecords(store.companion("__sources"))
    records.put({"law:民法典": {...}}); records.get("law:民法典")
"""

from __future__ import annotations

from typing import Any, Protocol

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy


class CompanionStore(Protocol):
    """What the records ask of the companion Edge store (`QdrantEdgeDocumentStore` has it)."""

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = ...) -> int: ...
    def get_documents_by_id(self, document_ids: list[str]) -> list[Document]: ...
    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]: ...
    def delete_documents(self, document_ids: list[str]) -> None: ...


class EdgeRecords:
    """Records as vector-less documents of an Edge store (the companion shard ``<path>__sources``)."""

    def __init__(self, store: CompanionStore) -> None:
        self._store = store

    def put(self, payloads: dict[str, dict[str, Any]]) -> None:
        self._store.write_documents([Document(id=source, meta=payload) for source, payload in payloads.items()],
                                    policy=DuplicatePolicy.OVERWRITE)

    def get(self, source: str) -> dict[str, Any] | None:
        found = self._store.get_documents_by_id([source])
        return found[0].meta if found else None

    def all(self) -> list[dict[str, Any]]:
        return [doc.meta for doc in self._store.filter_documents()]

    def remove(self, source: str) -> None:
        self._store.delete_documents([source])

    def drop(self) -> None:
        self._store.delete_documents([doc.id for doc in self._store.filter_documents()])
