"""`pipelines.stores`: knowledge bases opened where the settings put them (a server's settings are turned into a
`StoreLocation` in document_store/test_qdrant_store.py)."""

import dataclasses
from pathlib import Path

import pytest
from haystack import Document

from config.settings import Settings
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.qdrant_store import StoreLocation
from pipelines.stores import open_document_store, store_location


@pytest.fixture
def embedded(tmp_path: Path) -> Settings:
    return Settings(qdrant_path=tmp_path / "qdrant", embedding_dim=8, qdrant_hnsw_m=0, qdrant_hnsw_ef_construct=64)


def test_without_a_url_knowledge_bases_are_folders_under_the_path(embedded: Settings) -> None:
    assert store_location(embedded) == StoreLocation(path=embedded.qdrant_path, embedding_dim=8, hnsw_m=0,
                                                     hnsw_ef_construct=64)


def test_a_url_wins_over_the_path() -> None:
    location = store_location(Settings(qdrant_url="http://qdrant:6333", qdrant_path=Path("/never/used")))
    assert (location.url, location.path) == ("http://qdrant:6333", None)


def test_the_default_knowledge_base_is_the_settings_collection_and_a_named_one_another(embedded: Settings) -> None:
    settings = dataclasses.replace(embedded, collection="laws")
    laws, handbook = open_document_store(settings), open_document_store(settings, "handbook")
    try:
        assert isinstance(laws, QdrantEdgeDocumentStore) and isinstance(handbook, QdrantEdgeDocumentStore)
        assert (laws.knowledge_base, handbook.knowledge_base) == ("laws", "handbook")
        assert sorted(p.name for p in embedded.qdrant_path.iterdir()) == ["handbook", "laws"]
        handbook.write_documents([Document(id="1", content="员工请假需提前申请。", embedding=[0.1] * 8)])
        assert handbook.count_documents() == 1 and laws.count_documents() == 0
        assert open_document_store(settings, "handbook") is handbook  # one owner of a shard in a process
    finally:
        laws.close()
        handbook.close()


def test_without_connecting_nothing_is_created_on_disk(embedded: Settings) -> None:
    """``connect=False`` builds the object only (to serialise a pipeline)."""
    store = open_document_store(embedded, "unopened", connect=False)
    assert store.knowledge_base == "unopened" and not (embedded.qdrant_path / "unopened").exists()


@pytest.mark.parametrize("name", ["两个字", "a b", "x__sources", "a" * 65])
def test_a_name_that_cannot_be_a_collection_is_refused(embedded: Settings, name: str) -> None:
    with pytest.raises(ValueError, match="^Invalid knowledge base name .*: use 1-64 letters, digits, '_' or '-'"):
        open_document_store(embedded, name)
    with pytest.raises(ValueError, match="^Invalid knowledge base name"):
        open_document_store(dataclasses.replace(embedded, collection=name))  # QDRANT_COLLECTION too
    assert not embedded.qdrant_path.exists()
