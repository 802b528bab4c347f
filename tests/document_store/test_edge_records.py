"""EdgeRecords: a source manifest's records as vector-less documents of the Edge store's companion shard
(``<path>__sources``), read and written through a real store. What the manifest makes of them is in
test_source_manifest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from document_store.edge_records import EdgeRecords
from document_store.edge_store import QdrantEdgeDocumentStore

CIVIL = "law:中华人民共和国民法典"
RULES = "file:员工手册 (2024 版).md"


def record(count: int, status: str = "complete") -> dict:
    return {"source": CIVIL, "status": status, "content_hash": "ab12", "count": count, "updated_at": 1717171717.25,
            "bm25_k1": 1.2, "bm25_b": 0.75, "embedding": "", "in_force": True}


@pytest.fixture
def store(tmp_path: Path):
    made = QdrantEdgeDocumentStore(path=str(tmp_path / "kb" / "documents"), embedding_dim=4)
    yield made
    made.close()


def test_a_record_reads_back_as_written(store: QdrantEdgeDocumentStore) -> None:
    records = EdgeRecords(store.companion("__sources"))
    records.put({CIVIL: record(1260), RULES: {"source": RULES, "count": 3}})
    assert records.get(CIVIL) == record(1260)
    assert [type(v) for v in records.get(CIVIL).values()] == [type(v) for v in record(1260).values()]
    assert records.get(RULES) == {"source": RULES, "count": 3}
    assert records.get("law:未收录的法") is None
    assert store.count_documents() == 0  # the records are not documents of the knowledge base itself


def test_put_replaces_the_record_of_a_source(store: QdrantEdgeDocumentStore) -> None:
    records = EdgeRecords(store.companion("__sources"))
    records.put({CIVIL: record(0, "indexing")})
    records.put({CIVIL: record(1260)})
    assert records.all() == [record(1260)]


def test_remove_and_drop(store: QdrantEdgeDocumentStore) -> None:
    records = EdgeRecords(store.companion("__sources"))
    records.put({CIVIL: record(1260), RULES: {"source": RULES}})
    records.remove(RULES)
    records.remove("file:从未记录.md")  # nothing to remove is no error
    assert records.all() == [record(1260)]
    records.drop()
    assert records.all() == [] and records.get(CIVIL) is None
    records.put({RULES: {"source": RULES}})  # usable again after a drop
    assert records.all() == [{"source": RULES}]


def test_records_outlive_the_store_object(tmp_path: Path, store: QdrantEdgeDocumentStore) -> None:
    EdgeRecords(store.companion("__sources")).put({CIVIL: record(1260)})
    store.close()  # closes its companions too
    again = QdrantEdgeDocumentStore(path=store.path, embedding_dim=4)
    assert EdgeRecords(again.companion("__sources")).all() == [record(1260)]
    assert (tmp_path / "kb" / "documents__sources").is_dir()
    again.close()
