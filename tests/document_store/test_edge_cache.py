"""DocumentCache (the Edge store's search cache) on its own: what it reads, what it keeps, what it drops, and that a
read overtaken by a write keeps nothing. The store's use of it (no stale search result) is in test_edge_store.py."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from haystack import Document

from document_store.edge_cache import DocumentCache


def doc(point_id: int, text: str = "") -> Document:
    return Document(id=f"d{point_id}", content=text or f"第{point_id}条")


class Shard:
    """Stands in for the shard's payload reads: serves documents by point id and records what it was asked."""

    def __init__(self, ids: Iterable[int]) -> None:
        self.documents = {i: doc(i) for i in ids}
        self.asked: list[list[int]] = []

    def read(self, missing: list[int]) -> dict[int, Document]:
        self.asked.append(list(missing))
        return {i: self.documents[i] for i in missing}


def test_only_the_documents_not_held_are_read_and_the_order_is_the_callers() -> None:
    shard, cache = Shard(range(5)), DocumentCache(size=10)
    assert [d.id for d in cache.get([3, 1], shard.read)] == ["d3", "d1"]
    assert [d.id for d in cache.get([0, 3, 4, 1], shard.read)] == ["d0", "d3", "d4", "d1"]
    assert shard.asked == [[3, 1], [0, 4]]
    assert len(cache) == 4
    cache.get([4, 0], shard.read)
    assert shard.asked == [[3, 1], [0, 4]]  # all held: no read at all


def test_the_least_recently_used_are_dropped_first() -> None:
    shard, cache = Shard(range(5)), DocumentCache(size=3)
    cache.get([0, 1, 2], shard.read)
    cache.get([0], shard.read)  # 0 used again: 1 is now the least recent
    cache.get([3], shard.read)
    assert len(cache) == 3
    shard.asked.clear()
    cache.get([0, 2, 3], shard.read)
    assert shard.asked == []  # kept
    cache.get([1], shard.read)
    assert shard.asked == [[1]]  # dropped for 3


def test_a_cache_of_size_zero_reads_every_time_and_holds_nothing() -> None:
    shard, cache = Shard(range(2)), DocumentCache(size=0)
    assert [d.id for d in cache.get([0, 1], shard.read)] == ["d0", "d1"]
    assert [d.id for d in cache.get([0, 1], shard.read)] == ["d0", "d1"]
    assert shard.asked == [[0, 1], [0, 1]] and len(cache) == 0


def test_forget_drops_the_named_documents_or_all_and_counts_the_writes() -> None:
    shard, cache = Shard(range(4)), DocumentCache(size=10)
    cache.get([0, 1, 2, 3], shard.read)
    assert cache.generation == 0
    cache.forget([1, 99])  # an id it does not hold is no error
    assert len(cache) == 3 and cache.generation == 1
    shard.asked.clear()
    cache.get([0, 1], shard.read)
    assert shard.asked == [[1]]
    cache.forget()
    assert len(cache) == 0 and cache.generation == 2
    cache.forget([])  # an empty write still counts: the store bumps it around every write
    assert cache.generation == 3


def test_what_a_read_overtaken_by_a_write_returned_is_not_kept() -> None:
    """A write (``forget``) while the shard is being read: the caller gets what was read, the cache keeps none of
    it, not even the documents it held before (they may have been rewritten)."""
    shard, cache = Shard(range(3)), DocumentCache(size=10)
    cache.get([0], shard.read)

    def read_during_a_write(missing: list[int]) -> dict[int, Document]:
        cache.forget([2])
        return shard.read(missing)

    assert [d.id for d in cache.get([0, 1], read_during_a_write)] == ["d0", "d1"]
    assert len(cache) == 1  # only what it held before; 1 was not added
    shard.asked.clear()
    cache.get([1], shard.read)
    assert shard.asked == [[1]]


def test_fill_adds_up_to_size_and_keeps_what_searches_cached() -> None:
    shard, cache = Shard(range(10)), DocumentCache(size=4)
    cache.get([7], shard.read)
    limits: list[int] = []

    def scroll(limit: int) -> Iterable[tuple[int, Document]]:
        limits.append(limit)
        return [(i, doc(i, "预载")) for i in (7, 0, 1, 2, 3, 4)][:limit]

    cache.fill(scroll)
    assert limits == [4]  # asked for at most ``size``
    assert len(cache) == 4
    held = cache.get([7, 0, 1, 2], shard.read)
    assert held[0].content == "第7条"  # the searched copy stays, the preloaded one does not replace it
    assert [d.content for d in held[1:]] == ["预载"] * 3
    assert shard.asked == [[7]]


def test_fill_overtaken_by_a_write_adds_nothing() -> None:
    cache = DocumentCache(size=4)

    def scroll_during_a_write(limit: int) -> list[tuple[int, Document]]:
        cache.forget([0])
        return [(i, doc(i)) for i in range(limit)]

    cache.fill(scroll_during_a_write)
    assert len(cache) == 0


def test_a_read_that_fails_leaves_the_cache_as_it_was() -> None:
    shard, cache = Shard(range(2)), DocumentCache(size=4)
    cache.get([0], shard.read)

    def broken(missing: list[int]) -> dict[int, Document]:
        raise OSError("shard unreadable")

    with pytest.raises(OSError, match="shard unreadable"):
        cache.get([0, 1], broken)
    assert len(cache) == 1 and cache.generation == 0
