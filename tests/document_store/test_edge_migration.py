"""copy_into_edge: a collection of qdrant-client's local mode copied page by page into an Edge store, ids, payloads
and both vectors kept (the copy ranks every query as the source does), over what the target held, and the graph
built afterwards. Migrating a whole knowledge base on first open is in test_knowledge_bases.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from document_store import edge_migration
from document_store.edge_migration import copy_into_edge
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.qdrant_store import QdrantServerDocumentStore

DIM = 6


def articles(count: int) -> list[Document]:
    rng = random.Random(3)
    return [Document(id=f"a{i}", content=f"第{i}条", meta={"law": "示例法", "article_no": i, "in_force": i % 3 > 0},
                     embedding=[rng.gauss(0, 1) for _ in range(DIM)],
                     sparse_embedding=SparseEmbedding(indices=sorted(rng.sample(range(30), 3)),
                                                      values=[rng.uniform(0.5, 2) for _ in range(3)]))
            for i in range(count)]


@pytest.fixture
def local(tmp_path: Path):
    made = QdrantServerDocumentStore(path=str(tmp_path / "local"), index="kb", embedding_dim=DIM,
                                     use_sparse_embeddings=True, sparse_idf=True, similarity="cosine",
                                     progress_bar=False)
    yield made
    made.close()


def test_every_page_is_copied_and_answers_as_the_source(local: QdrantServerDocumentStore, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edge_migration, "PAGE", 4)  # 11 articles: three pages, the last one short
    docs = articles(11)
    local.write_documents(docs)
    target = QdrantEdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=DIM)
    assert copy_into_edge(local, target) == 11
    assert target.count_documents() == 11
    copied = {d.id: d for d in target.filter_documents()}
    assert {i: (d.content, d.meta) for i, d in copied.items()} == {d.id: (d.content, d.meta) for d in docs}
    for doc in docs[:4]:
        assert [d.id for d in target.query_dense(doc.embedding, top_k=5)] == [
            d.id for d in local.query_dense(doc.embedding, top_k=5)]
        ours = target.query_sparse(doc.sparse_embedding, top_k=5)
        theirs = local.query_sparse(doc.sparse_embedding, top_k=5)
        assert [d.score for d in ours] == pytest.approx([d.score for d in theirs], rel=1e-5)  # the IDF alike
    current = {"field": "meta.in_force", "operator": "==", "value": True}
    assert len(target.filter_documents(current)) == 7  # the booleans filter on the copy too
    target.close()


def test_the_copy_overwrites_what_the_target_held_and_keeps_the_rest(local: QdrantServerDocumentStore,
                                                                     tmp_path: Path) -> None:
    docs = articles(3)
    local.write_documents(docs)
    target = QdrantEdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=DIM)
    target.write_documents([Document(id="a1", content="旧的", embedding=[1.0] * DIM),
                            Document(id="only-here", content="留下", embedding=[1.0] * DIM)])
    assert copy_into_edge(local, target) == 3
    assert {d.id: d.content for d in target.filter_documents()} == {"a0": "第0条", "a1": "第1条", "a2": "第2条",
                                                                    "only-here": "留下"}
    target.close()


def test_an_empty_collection_copies_nothing(local: QdrantServerDocumentStore, tmp_path: Path) -> None:
    target = QdrantEdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=DIM)
    assert copy_into_edge(local, target, progress=True) == 0
    assert target.count_documents() == 0
    target.close()


def test_the_graph_is_built_once_the_copy_is_large_enough(local: QdrantServerDocumentStore, tmp_path: Path) -> None:
    local.write_documents(articles(30))
    target = QdrantEdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=DIM, exact_below=20)
    copy_into_edge(local, target)
    assert target.shard.info().indexed_vectors_count == 60  # the sparse index and the dense graph
    target.close()
