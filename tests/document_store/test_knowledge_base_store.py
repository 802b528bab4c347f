"""The one store protocol (issue 49, item 1): the embedded Edge store and the server store (here on qdrant-client's
local mode) are both `KnowledgeBaseStore`s and answer every call the product makes the same way."""

from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import DocumentStoreBaseTests
from haystack.utils.filters import FilterError

from document_store.edge_store import DOCUMENTS, QdrantEdgeDocumentStore
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.qdrant_store import QdrantServerDocumentStore
from document_store.source_manifest import SourceManifest, completed


def _stripped(documents: list[Document]) -> list[Document]:
    return sorted((Document(id=d.id, content=d.content, meta=d.meta, blob=d.blob) for d in documents),
                  key=lambda d: d.id)


def articles() -> list[Document]:
    rows = [("示例法", "第一条", "law:示例法", [1.0, 0.0, 0.0, 0.0], {3: 1.0, 5: 2.0}),
            ("示例法", "第二条", "law:示例法", [0.9, 0.1, 0.0, 0.0], {5: 1.0}),
            ("另一法", "第一条", "file:另一法.md", [0.0, 1.0, 0.0, 0.0], {7: 1.0})]
    return [Document(id=f"{law}{no}", content=f"{law}{no}的内容", embedding=dense,
                     sparse_embedding=SparseEmbedding(indices=list(sparse), values=list(sparse.values())),
                     meta={"law": law, "article_no": no, "key": f"{law}{no}", "source": source, "in_force": True})
            for law, no, source, dense, sparse in rows]


@pytest.fixture(params=["edge", "server"])
def store(request, tmp_path: Path):
    if request.param == "edge":
        made: KnowledgeBaseStore = QdrantEdgeDocumentStore(path=str(tmp_path / "kb" / DOCUMENTS), embedding_dim=4)
    else:
        made = QdrantServerDocumentStore(path=str(tmp_path / "local"), index="kb", embedding_dim=4,
                                         use_sparse_embeddings=True, sparse_idf=True, progress_bar=False)
    made.open()
    made.upsert(articles())
    yield made
    made.close()


def test_both_are_knowledge_base_stores_named_by_their_knowledge_base(store) -> None:
    assert isinstance(store, KnowledgeBaseStore)
    assert store.knowledge_base == "kb"
    assert store.engine in ("edge", "qdrant")
    assert store.writes is None if store.engine == "qdrant" else isinstance(store.writes, int)


def test_queries_facets_and_filters_answer_alike(store) -> None:
    assert [d.id for d in store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=2)] == ["示例法第一条", "示例法第二条"]
    in_other = {"field": "meta.law", "operator": "==", "value": "另一法"}
    assert [d.id for d in store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=3, filters=in_other)] == ["另一法第一条"]
    sparse = store.query_sparse(SparseEmbedding(indices=[5], values=[1.0]), top_k=5)
    assert [d.id for d in sparse] == ["示例法第一条", "示例法第二条"] and sparse[0].score > sparse[1].score
    assert sorted(store.facet("meta.law", 10)) == ["另一法", "示例法"]
    assert store.facet("meta.law", 10, filters=in_other) == ["另一法"]
    assert len(store.filter_documents(limit=2)) == 2 and len(store.filter_documents()) == 3
    assert [d.id for d in store.filter_documents(in_other, limit=5)] == ["另一法第一条"]


def test_a_value_no_document_holds_any_more_leaves_the_facet(store) -> None:
    """Both stores alike: Edge's facet index kept a deleted law with a count of 0 (a bare 第二条 then stayed
    ambiguous in what had become a one-law knowledge base)."""
    store.delete_by_filter({"field": "meta.law", "operator": "==", "value": "另一法"})
    assert store.facet("meta.law", 10) == ["示例法"]


def test_the_indexer_rewrites_in_place(store) -> None:
    assert store.source_counts() == {"law:示例法": 2, "file:另一法.md": 1}
    batches = list(store.scroll_sources({"law:示例法"}))
    ids = [point_id for batch_ids, _ in batches for point_id in batch_ids]
    documents = [doc for _, batch in batches for doc in batch]
    assert sorted(d.meta["key"] for d in documents) == ["示例法第一条", "示例法第二条"]
    store.set_metas([(point_id, {**doc.meta, "status": "已修改"})
                     for point_id, doc in zip(ids, documents, strict=True)])
    store.set_sparse([(point_id, SparseEmbedding(indices=[9], values=[1.0])) for point_id in ids])
    assert {d.meta["status"] for d in store.filter_documents({"field": "meta.law", "operator": "==",
                                                              "value": "示例法"})} == {"已修改"}
    hits = store.query_sparse(SparseEmbedding(indices=[9], values=[1.0]), top_k=5)
    assert sorted(d.id for d in hits) == ["示例法第一条", "示例法第二条"]
    assert store.query_sparse(SparseEmbedding(indices=[5], values=[1.0]), top_k=5) == []
    assert store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=1)[0].id == "示例法第一条"  # the dense vectors kept
    store.write_documents([Document(id="示例法第一条", content="新", meta={"source": "law:示例法"})],
                          policy=DuplicatePolicy.OVERWRITE)
    assert store.count_documents() == 3


def test_the_manifest_lives_with_the_store_and_is_dropped_with_it(store, tmp_path: Path) -> None:
    SourceManifest(store).mark_complete([completed("law:示例法", "hash", 2)])
    assert [r.source for r in SourceManifest(store).all()] == ["law:示例法"]
    store.drop()
    if store.engine == "edge":
        assert not (tmp_path / "kb").exists()
    store.open()  # a dropped knowledge base opens again, empty
    assert store.count_documents() == 0 and SourceManifest(store).all() == []


class TestHaystackSuiteOnTheServerStore(DocumentStoreBaseTests):
    """Haystack's `DocumentStoreBaseTests` on the server store too (test_edge_store.py runs them on the Edge store),
    here on qdrant-client's local mode: its overrides (``filter_documents`` with a limit) keep the protocol."""

    @pytest.fixture
    def document_store(self, tmp_path: Path):
        store = QdrantServerDocumentStore(path=str(tmp_path / "local"), index="kb", embedding_dim=768,
                                          use_sparse_embeddings=True, sparse_idf=True, progress_bar=False)
        yield store
        store.close()

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        assert _stripped(received) == _stripped(expected)

    # as on the Edge store (test_edge_store.py): qdrant-haystack's converter refuses a None value with a FilterError
    @pytest.mark.parametrize("operator", ["==", "!=", ">", ">=", "<", "<="])
    def test_comparison_with_none_is_a_clear_error(self, document_store, operator: str) -> None:
        with pytest.raises(FilterError, match="not found"):
            document_store.filter_documents({"field": "meta.number", "operator": operator, "value": None})

    test_comparison_equal_with_none = test_comparison_not_equal_with_none = None
    test_comparison_greater_than_with_none = test_comparison_greater_than_equal_with_none = None
    test_comparison_less_than_with_none = test_comparison_less_than_equal_with_none = None

    def test_write_documents(self, document_store) -> None:
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):  # the default policy (NONE) fails, as on the Edge store
            document_store.write_documents([doc])
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


def test_a_not_of_several_conditions_and_a_source_deleted_by_filter_alike(store) -> None:
    """Haystack's NOT (AND …), not qdrant-haystack's "none of them", on both stores; what the indexer deletes."""
    not_both = {"operator": "NOT", "conditions": [{"field": "meta.law", "operator": "==", "value": "示例法"},
                                                  {"field": "meta.article_no", "operator": "==", "value": "第一条"}]}
    assert sorted(d.id for d in store.filter_documents(not_both)) == ["另一法第一条", "示例法第二条"]
    assert sorted(d.id for d in store.filter_documents(not_both, limit=5)) == ["另一法第一条", "示例法第二条"]
    assert store.delete_by_filter({"field": "meta.source", "operator": "==", "value": "law:示例法"}) == 2
    assert [d.id for d in store.filter_documents()] == ["另一法第一条"]
    assert store.delete_by_filter({"field": "meta.source", "operator": "==", "value": "law:示例法"}) == 0
