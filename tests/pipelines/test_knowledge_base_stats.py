"""`pipelines.knowledge_base_stats`: what `stats` prints and the ``knowledge_bases`` deployment returns, read from
a real store and its source manifest (an interrupted source through the CLI is in interfaces/test_cli.py)."""

from dataclasses import replace

import pytest
from haystack import Document

from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.source_manifest import SourceManifest, completed
from helpers.text_encoding.onnx_encoder import INT8_FILE
from pipelines.embedders import embedding_fingerprint
from pipelines.judges import describe_judge
from pipelines.knowledge_base_stats import embedded_with, knowledge_base_stats
from pipelines.knowledge_base_warnings import knowledge_base_warnings


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("kb_stats")
    (root / "my-e5" / "onnx").mkdir(parents=True)
    (root / "my-e5" / "onnx" / INT8_FILE).write_bytes(b"int8 weights")
    return Settings(qdrant_path=root / "qdrant", embedding_model=str(root / "my-e5"), embedding_dim=4,
                    collection="handbook", judge="llm")


def indexed(settings: Settings, source: str, count: int, length: int):
    return completed(source, "hash", count, embedding=embedding_fingerprint(settings), length=length,
                     bm25=(settings.bm25_k1, settings.bm25_b, 16.5), meta_hash="versions")


def test_an_empty_knowledge_base(kb_store: KnowledgeBaseStore, manifest: SourceManifest, settings: Settings) -> None:
    assert knowledge_base_stats(kb_store, settings) == {
        "name": "handbook", "where": str(settings.qdrant_path), "documents": 0, "sources": [],
        "models": "embedder my-e5 (nothing indexed yet)", "judge": describe_judge(settings), "bm25": None,
        "engine": "edge", "warnings": []}


def test_sources_in_name_order_with_the_bm25_average_over_the_complete_ones(
        kb_store: KnowledgeBaseStore, manifest: SourceManifest, settings: Settings) -> None:
    manifest.mark_complete([indexed(settings, "file:员工手册.md", 3, 50), indexed(settings, "file:考勤.md", 1, 16)])
    manifest.mark_indexing({"file:a.md": "hash"})  # counts for neither the average nor the documents
    stats = knowledge_base_stats(kb_store, settings)
    assert stats["sources"] == [{"status": "indexing", "count": 0, "source": "file:a.md"},
                                {"status": "complete", "count": 3, "source": "file:员工手册.md"},
                                {"status": "complete", "count": 1, "source": "file:考勤.md"}]
    assert stats["bm25"] == {"k1": settings.bm25_k1, "b": settings.bm25_b, "average_terms": 16.5}  # 66 / 4
    assert stats["warnings"] == knowledge_base_warnings(SourceManifest(kb_store), settings, "handbook") != []


def test_documents_are_counted_in_the_store_itself(kb_store: KnowledgeBaseStore, manifest: SourceManifest,
                                                   settings: Settings) -> None:
    kb_store.write_documents([Document(id=str(i), content=f"第{i}条", embedding=[1.0, 0.0, 0.0, 0.0]) for i in (1, 2)])
    try:
        assert knowledge_base_stats(kb_store, settings)["documents"] == 2
    finally:
        kb_store.delete_documents(["1", "2"])


def test_the_embedder_of_the_vectors_is_the_current_one_or_another(manifest: SourceManifest,
                                                                   settings: Settings) -> None:
    fingerprint = embedding_fingerprint(settings)
    manifest.mark_complete([indexed(settings, "law:a", 2, 30)])
    assert embedded_with(manifest, settings) == (f"every source embedded with my-e5 ({settings.embedding_model}, "
                                                 f"fingerprint {fingerprint})")
    manifest.mark_indexing({"law:b": "hash"})  # interrupted: not "another embedder"
    assert embedded_with(manifest, settings).startswith("every complete source embedded with my-e5 (")
    other = replace(settings, passage_prefix="passage:: ")
    assert embedded_with(manifest, other) == (
        "1 of 2 source(s) embedded with another embedder than my-e5 (re-run `index`)")
