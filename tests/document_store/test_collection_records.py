"""CollectionRecords: a source manifest's records as payload-only points of ``<collection>__sources``, here in
qdrant-client's in-memory local mode (what a server collection gets through the same client calls; the records of
a local-mode store on disk are in test_source_manifest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from qdrant_client import QdrantClient

from document_store.collection_records import CollectionRecords

CIVIL = "law:中华人民共和国民法典"
RULES = "file:员工手册 (2024 版).md"


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    made = QdrantClient(location=":memory:")
    yield made
    made.close()


def record(count: int, status: str = "complete") -> dict:
    return {"source": CIVIL, "status": status, "count": count, "updated_at": 1717171717.25, "bm25_b": 0.75}


def test_the_collection_is_made_once_and_its_records_kept(client: QdrantClient) -> None:
    assert not client.collection_exists("kb__sources")
    CollectionRecords(client, "kb__sources").put({CIVIL: record(1260)})
    assert client.collection_exists("kb__sources")
    again = CollectionRecords(client, "kb__sources")  # opening an existing collection does not empty it
    assert again.collection == "kb__sources" and again.get(CIVIL) == record(1260)


def test_put_get_and_replace(client: QdrantClient) -> None:
    records = CollectionRecords(client, "kb__sources")
    records.put({CIVIL: record(0, "indexing"), RULES: {"source": RULES, "count": 3}})
    records.put({CIVIL: record(1260)})  # the same source is the same point
    assert records.get(CIVIL) == record(1260) and records.get(RULES) == {"source": RULES, "count": 3}
    assert records.get("law:未收录的法") is None
    assert sorted(r["source"] for r in records.all()) == [RULES, CIVIL]


def test_every_record_is_listed_past_one_page(client: QdrantClient) -> None:
    records = CollectionRecords(client, "kb__sources")
    records.put({f"file:{i}.md": {"source": f"file:{i}.md"} for i in range(1005)})  # a scroll page is 1,000
    listed = [r["source"] for r in records.all()]
    assert len(listed) == 1005 and len(set(listed)) == 1005


def test_remove_and_drop(client: QdrantClient) -> None:
    records = CollectionRecords(client, "kb__sources")
    other = CollectionRecords(client, "other__sources")
    records.put({CIVIL: record(1260), RULES: {"source": RULES}})
    other.put({CIVIL: record(7)})
    records.remove(RULES)
    records.remove("file:从未记录.md")  # nothing to remove is no error
    assert records.all() == [record(1260)]
    records.drop()
    assert not client.collection_exists("kb__sources")
    assert other.all() == [record(7)]  # another knowledge base's records are untouched
