"""The Edge store's search cache: documents by point id, bounded, dropped on every write.

A search asks the engine for ids and scores only and takes the documents from here, reading from the shard only
those it does not hold (payload reads, not the search, dominate a query: 100 payloads cost ~10 ms, the exact search
over 24,000 articles ~6 ms). Every write and delete bumps a generation counter; what a read began before a write is
not kept, so a search never returns a stale document.

Usage::

    cache = DocumentCache(size=50_000)
    documents = cache.get(point_ids, read=lambda missing: {i: doc, ...})
    cache.forget(point_ids)          # before and after a write
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from haystack import Document


class DocumentCache:
    """At most ``size`` documents, least recently used dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._documents: OrderedDict[Any, Document] = OrderedDict()  # point id → document, least recent first
        self.generation = 0  # bumped by every write and delete
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._documents)

    def get(self, point_ids: list[Any], read: Callable[[list[Any]], dict[Any, Document]]) -> list[Document]:
        """The documents of ``point_ids``, in order; ``read(missing)`` supplies those not held."""
        with self._lock:
            generation = self.generation
            found = {i: self._documents[i] for i in point_ids if i in self._documents}
        missing = [i for i in point_ids if i not in found]
        if missing:
            found.update(read(missing))
        with self._lock:
            if generation == self.generation:  # no write since the read began: what was read is current
                for i in point_ids:
                    self._documents[i] = found[i]
                    self._documents.move_to_end(i)
                while len(self._documents) > self.size:
                    self._documents.popitem(last=False)
        return [found[i] for i in point_ids]

    def fill(self, read: Callable[[int], Iterable[tuple[Any, Document]]]) -> None:
        """Add up to ``size`` documents from ``read(limit)`` unless a write happens meanwhile."""
        with self._lock:
            generation = self.generation
        loaded = dict(read(self.size))
        with self._lock:
            if generation == self.generation:  # what searches cached meanwhile stays; the bound holds
                for point_id, document in loaded.items():
                    if len(self._documents) >= self.size:
                        break
                    self._documents.setdefault(point_id, document)

    def forget(self, point_ids: Iterable[Any] | None = None) -> None:
        """Drop these documents (all with None): they are being rewritten or deleted."""
        with self._lock:
            self.generation += 1
            if point_ids is None:
                self._documents.clear()
            for point_id in point_ids or ():
                self._documents.pop(point_id, None)
