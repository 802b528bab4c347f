"""Knowledge bases on disk: Qdrant Edge shards by default, stores made by qdrant-client's local mode migrated on
first open (vectors and manifest kept), listing, deleting, and one store object per shard in a process."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from document_store import knowledge_bases
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.knowledge_bases import (
    MIGRATED,
    delete_knowledge_base,
    list_knowledge_bases,
    open_store,
    shared_store_from_dict,
)
from document_store.qdrant_store import QdrantServerDocumentStore, StoreLocation
from document_store.source_manifest import SourceManifest, completed


def articles(count: int, dim: int = 8) -> list[Document]:
    rng = random.Random(0)
    return [Document(id=f"a{i}", content=f"第{i}条", meta={"law": "示例法", "key": f"示例法第{i}条", "in_force": True,
                                                        "source": "law:示例法"},
                     embedding=[rng.gauss(0, 1) for _ in range(dim)],
                     sparse_embedding=SparseEmbedding(indices=[i % 5, 7], values=[1.0, 0.5])) for i in range(count)]


def old_local_mode_kb(root: Path, name: str, docs: list[Document]) -> None:
    """A knowledge base as the project made it before the Edge store: local mode in ``<root>/<name>``, with its
    manifest collection beside the documents."""
    local = QdrantServerDocumentStore(path=str(root / name), index=name, embedding_dim=8,
                                      use_sparse_embeddings=True, sparse_idf=True, similarity="cosine",
                                      progress_bar=False)
    local.write_documents(docs)
    SourceManifest(local).mark_complete([completed("law:示例法", "hash", len(docs), "e5", 40, (1.2, 0.75, 2.0),
                                                   "meta")])
    local.close()


@pytest.fixture
def location(tmp_path: Path):
    yield StoreLocation(path=tmp_path / "kbs", embedding_dim=8)
    for store in list(knowledge_bases._stores.values()):  # this process's stores on tmp_path: release them
        store.close()
    knowledge_bases._stores.clear()


def test_a_local_mode_knowledge_base_is_migrated_once_on_open(location, caplog):
    docs = articles(30)
    old_local_mode_kb(location.path, "old", docs)
    with caplog.at_level(logging.WARNING):
        store = open_store(location, "old", progress=False)
    assert isinstance(store, QdrantEdgeDocumentStore)
    assert store.count_documents() == 30
    query = docs[3].embedding
    assert store.query_dense(query, top_k=1)[0].id == "a3"  # vectors copied as they were
    assert [r.source for r in SourceManifest(store).all()] == ["law:示例法"]
    assert SourceManifest(store).get("law:示例法").bm25_avgdl == 2.0
    assert "copying it into Qdrant Edge" in caplog.text and "30 articles and 1 source records" in caplog.text
    assert (location.path / "old" / MIGRATED).is_file()
    store.close()
    assert knowledge_bases.migrate_local_mode(location.path / "old", "old", store, progress=False) == 0  # done


def test_an_interrupted_migration_is_redone_on_the_next_open(location, monkeypatch):
    old_local_mode_kb(location.path, "old", articles(12))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(knowledge_bases, "copy_into_edge", crash)
    with pytest.raises(KeyboardInterrupt):
        open_store(location, "old", progress=False)
    assert not (location.path / "old" / MIGRATED).exists()
    monkeypatch.undo()
    assert open_store(location, "old", progress=False).count_documents() == 12


def test_knowledge_bases_are_listed_and_deleted(location):
    old_local_mode_kb(location.path, "old", articles(3))  # still to migrate: listed
    new = open_store(location, "new")
    new.write_documents(articles(2))
    (location.path / "stray").mkdir()  # a folder that holds no knowledge base
    assert list_knowledge_bases(location) == ["new", "old"]
    assert new.knowledge_base == "new"
    delete_knowledge_base(new)
    assert not (location.path / "new").exists()
    assert list_knowledge_bases(location) == ["old"]
    assert open_store(location, "new").count_documents() == 0  # made again, empty


def test_one_store_object_per_shard_in_a_process(location):
    store = open_store(location, "kb")
    assert open_store(location, "kb") is store
    assert shared_store_from_dict(store.to_dict()) is store  # what every component loaded from YAML gets
    other_dimension = StoreLocation(path=location.path, embedding_dim=16)
    with pytest.raises(Exception, match="8-dimensional"):
        open_store(other_dimension, "kb")  # refused by the shard, not handed the 8-d object
