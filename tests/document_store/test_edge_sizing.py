"""The Edge shard's sizing (`document_store.edge_sizing`): the search beam's step at WIDER_EF_FROM articles, the
graph's indexing threshold in kilobytes, and the dense size read back from a shard's config file. The beam's widening
on a live store is in test_edge_store.py; when a graph is built there too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from document_store.edge_sizing import (
    HNSW_EF,
    HNSW_FULL_SCAN_KB,
    WARM,
    WIDER_EF,
    WIDER_EF_FROM,
    search_ef,
    shard_config,
    stored_dense_size,
)
from document_store.edge_store import CONFIG_FILE, QdrantEdgeDocumentStore


def test_the_beam_widens_exactly_at_wider_ef_from() -> None:
    assert WIDER_EF > HNSW_EF
    assert search_ef(0) == search_ef(WIDER_EF_FROM - 1) == HNSW_EF
    assert search_ef(WIDER_EF_FROM) == search_ef(10 * WIDER_EF_FROM) == WIDER_EF


@pytest.mark.parametrize(("exact_below", "dim", "kilobytes"), [
    (10_000, 384, 15_000),  # 10,000 vectors of 384 floats: 15,000 KiB exactly
    (1_000, 4, 16),  # 15.6 KiB: rounded up, so 1,000 articles are still searched exactly
    (1, 3, 1),  # 12 bytes: a whole KiB
    (0, 384, 0),  # exact_below 0: a graph from the first article on
])
def test_the_indexing_threshold_is_the_dense_vectors_of_exact_below_articles_in_kib(
        exact_below: int, dim: int, kilobytes: int) -> None:
    assert shard_config(dim, 16, 100, exact_below).optimizers.indexing_threshold == kilobytes


def test_the_config_holds_the_graph_and_vector_settings() -> None:
    config = shard_config(8, 0, 50, 1_000)
    assert (config.hnsw_config.m, config.hnsw_config.ef_construct) == (0, 50)
    assert config.hnsw_config.full_scan_threshold == HNSW_FULL_SCAN_KB
    dense, = config.vectors.values()
    assert dense.size == 8 and dense.memory == WARM
    assert list(config.vectors) == ["text-dense"] and list(config.sparse_vectors) == ["text-sparse"]


def test_the_dense_size_is_read_from_a_real_shard(tmp_path: Path) -> None:
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=12)
    store.open()
    store.close()
    assert stored_dense_size(tmp_path / "s" / CONFIG_FILE) == 12


@pytest.mark.parametrize("content", [
    None,  # no file
    "not json",
    json.dumps({"vectors": {}}),
    json.dumps({"vectors": {"text-dense": {"distance": "Cosine"}}}),
    json.dumps({"vectors": {"text-dense": {"size": "many"}}}),
    json.dumps({"vectors": ["text-dense"]}),
    json.dumps([]),
])
def test_a_config_that_does_not_say_is_none(tmp_path: Path, content: str | None) -> None:
    config = tmp_path / CONFIG_FILE
    if content is not None:
        config.write_text(content)
    assert stored_dense_size(config) is None


def test_a_folder_in_place_of_the_config_file_is_none(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).mkdir()
    assert stored_dense_size(tmp_path / CONFIG_FILE) is None
