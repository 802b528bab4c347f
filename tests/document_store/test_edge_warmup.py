"""What the Edge store does at warm-up so that its first searches are not cold (document_store.edge_warmup)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from haystack import Document

from document_store import edge_warmup
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.edge_warmup import GRAPH_WARM_SEARCHES, PAYLOAD_FILES, read_payloads, warm_graph


class CountingShard:
    """The real shard, with its searches counted."""

    def __init__(self, shard: Any) -> None:
        self.shard, self.searches = shard, 0

    def query(self, request: Any) -> Any:
        self.searches += 1
        return self.shard.query(request)


@pytest.fixture
def store(tmp_path: Path):
    rng = random.Random(3)
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=8, exact_below=50)
    store.write_documents([Document(id=f"d{i}", content=f"第{i}条" * 20, embedding=[rng.gauss(0, 1) for _ in range(8)])
                           for i in range(80)])
    store.optimize()  # 80 ≥ exact_below: a graph
    yield store
    store.close()


def test_payload_files_are_read_once_up_to_the_limit(store: QdrantEdgeDocumentStore) -> None:
    files = list(Path(store.path).glob(PAYLOAD_FILES))
    size = sum(f.stat().st_size for f in files)
    assert files and size > 0
    assert read_payloads(store.path) == size
    assert read_payloads(store.path, limit=1000) == 1000
    assert read_payloads(store.path + "-nowhere") == 0  # no shard there: nothing to read, no error


def test_the_graph_is_searched_with_random_vectors_within_the_time_limit(
        store: QdrantEdgeDocumentStore, monkeypatch: pytest.MonkeyPatch) -> None:
    shard = CountingShard(store.shard)
    warm_graph(shard, "text-dense", 8, hnsw_ef=64)
    assert shard.searches == GRAPH_WARM_SEARCHES
    monkeypatch.setattr(edge_warmup, "GRAPH_WARM_SECONDS", -1.0)  # already past the deadline
    warm_graph(shard, "text-dense", 8, hnsw_ef=64)
    assert shard.searches == GRAPH_WARM_SEARCHES


def test_preload_warms_the_graph_only_where_there_is_one(tmp_path: Path, store: QdrantEdgeDocumentStore,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    warmed: list[str] = []
    monkeypatch.setattr("document_store.edge_store.warm_graph", lambda shard, *args: warmed.append(args[0]))
    store.preload()
    assert warmed == ["text-dense"]
    small = QdrantEdgeDocumentStore(path=str(tmp_path / "small"), embedding_dim=8)  # exact_below 10,000
    small.write_documents([Document(id="a", content="甲", embedding=[1.0] * 8)])
    small.preload()
    assert warmed == ["text-dense"]  # exact search: nothing to warm
    assert [d.id for d in small.query_dense([1.0] * 8, top_k=1)] == ["a"]
    small.close()
