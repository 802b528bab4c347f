import pytest
from haystack import Document, Pipeline
from haystack.dataclasses import ByteStream, SparseEmbedding
from haystack_integrations.document_stores.qdrant.converters import convert_haystack_documents_to_qdrant_points

from components.writers.qdrant_point_writer import QdrantPointWriter
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.qdrant_store import QdrantServerDocumentStore, to_points
from pipelines.yaml_export import ALLOWED_MODULES


def documents() -> list[Document]:
    return [
        Document(content="处理个人信息应当取得个人同意。", embedding=[0.5, -0.5, 0.5, 0.5],
                 sparse_embedding=SparseEmbedding(indices=[3, 17, 90], values=[1.0, 0.5, 2.25]),
                 meta={"law": "示例法", "article_no": "第二条", "key": "示例法第二条", "nested": {"a": [1, {"b": 2}]}}),
        Document(content="只有稠密向量。", embedding=[0.0, 1.0, 0.0, 0.0], meta={"law": "示例法"}),
        Document(content="只有稀疏向量。", sparse_embedding=SparseEmbedding(indices=[1], values=[0.5])),
        Document(content="没有向量。", score=0.7, blob=ByteStream(data=b"raw", mime_type="text/plain")),
    ]


@pytest.mark.parametrize("use_sparse_embeddings", [True, False])
def test_points_equal_the_librarys_conversion(use_sparse_embeddings: bool) -> None:
    docs = documents()
    expected = convert_haystack_documents_to_qdrant_points(docs, use_sparse_embeddings=use_sparse_embeddings)
    assert to_points(docs, use_sparse_embeddings) == expected


def test_points_do_not_share_the_documents_mutable_data() -> None:
    docs = documents()
    point = to_points(docs, True)[0]
    point.payload["meta"]["nested"]["a"].append(3)
    point.vector["text-dense"][0] = 9.0
    assert docs[0].meta["nested"]["a"] == [1, {"b": 2}] and docs[0].embedding[0] == 0.5


@pytest.mark.parametrize("kind", ["edge", "local mode"])
def test_writes_read_back_and_overwrite_by_id(tmp_path, kind: str) -> None:
    store = (QdrantEdgeDocumentStore(path=str(tmp_path / "e"), embedding_dim=4, write_batch_size=2,
                                     return_embedding=True) if kind == "edge" else
             QdrantServerDocumentStore(path=str(tmp_path / "q"), index="t", embedding_dim=4,
                                       # 3 batches for 5 documents
                                       use_sparse_embeddings=True, write_batch_size=2, return_embedding=True))
    writer = QdrantPointWriter(document_store=store)
    docs = documents()[:2] + [Document(content=f"第{i}条", embedding=[float(i), 0.0, 0.0, 1.0]) for i in range(3)]
    assert writer.run(documents=docs)["documents_written"] == 5
    assert writer.run(documents=docs[:2])["documents_written"] == 2
    assert store.count_documents() == 5
    stored = {d.id: d for d in store.filter_documents()}
    original = docs[0]
    assert stored[original.id].meta == original.meta and stored[original.id].content == original.content
    assert stored[original.id].sparse_embedding.to_dict() == original.sparse_embedding.to_dict()
    assert stored[original.id].embedding == pytest.approx(original.embedding)
    store.close()


def test_empty_and_bad_input(tmp_path) -> None:
    store = QdrantServerDocumentStore(path=str(tmp_path / "q"), index="t", embedding_dim=4)
    writer = QdrantPointWriter(document_store=store)
    assert writer.run(documents=[])["documents_written"] == 0
    with pytest.raises(ValueError, match="expects Documents, got str"):
        writer.run(documents=["not a document"])
    store.close()


def test_serialises_and_shares_the_open_store(fixture_store) -> None:
    pipeline = Pipeline()
    pipeline.add_component("writer", QdrantPointWriter(document_store=fixture_store))
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES)
    assert loaded.get_component("writer").document_store is fixture_store
