"""SourceManifest: the per-source records of a knowledge base (indexing → complete), and the questions the indexer
asks of them (what is incomplete, the BM25 corpus size, which sources need reweighting, relabelling or
re-embedding), on a real Edge store; the records round trip on the server store (local mode) as well."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.qdrant_store import QdrantServerDocumentStore
from document_store.source_manifest import COMPLETE, INDEXING, SourceManifest, SourceRecord, completed

K1, B = 1.2, 0.75


@pytest.fixture
def store(tmp_path: Path):
    made = QdrantEdgeDocumentStore(path=str(tmp_path / "kb" / "documents"), embedding_dim=4)
    yield made
    made.close()


@pytest.fixture
def manifest(store: QdrantEdgeDocumentStore) -> SourceManifest:
    return SourceManifest(store)


def weighted(source: str, count: int, length: int, avgdl: float, k1: float = K1, **fields) -> SourceRecord:
    return completed(source, "h", count, "e5", length, (k1, B, avgdl), **fields)


@pytest.mark.parametrize("engine", ["edge", "server"])
def test_a_record_reads_back_equal_on_both_stores(tmp_path: Path, engine: str) -> None:
    if engine == "edge":
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "kb" / "documents"), embedding_dim=4)
    else:
        store = QdrantServerDocumentStore(path=str(tmp_path / "local"), index="kb", embedding_dim=4,
                                          use_sparse_embeddings=True, sparse_idf=True, progress_bar=False)
    record = completed("law:中华人民共和国民法典", "c0ffee", 1260, "e5-small/int8", 98765, (1.2, 0.75, 78.375),
                       meta_hash="m1")
    SourceManifest(store).mark_complete([record])
    got = SourceManifest(store).get(record.source)
    assert replace(got, updated_at=0.0) == replace(record, updated_at=0.0)  # k1 and b exactly: weighted_with
    assert got.updated_at == pytest.approx(record.updated_at, abs=1e-3)  # Edge may be 1 ULP off (test_edge_points)
    assert SourceManifest(store).get("law:未收录的法") is None
    store.close()


def test_sources_being_written_are_incomplete_until_marked_complete(manifest: SourceManifest) -> None:
    manifest.mark_indexing({"law:乙法": "h2", "file:甲.md": "h1"}, embedding="e5", meta_hashes={"law:乙法": "m2"})
    incomplete = manifest.incomplete()
    assert [(r.source, r.status, r.content_hash, r.count, r.embedding, r.meta_hash) for r in incomplete] == [
        ("file:甲.md", INDEXING, "h1", 0, "e5", ""), ("law:乙法", INDEXING, "h2", 0, "e5", "m2")]  # sorted by source
    manifest.mark_complete([completed("law:乙法", "h2", 12)])
    assert [r.source for r in manifest.incomplete()] == ["file:甲.md"]
    assert manifest.get("law:乙法").status == COMPLETE and manifest.get("law:乙法").count == 12
    manifest.mark_complete([])  # nothing finished: nothing written
    manifest.mark_indexing({})
    assert [r.source for r in manifest.all()] == ["file:甲.md", "law:乙法"]


def test_the_corpus_counts_complete_sources_not_excluded(manifest: SourceManifest) -> None:
    manifest.mark_complete([weighted("law:甲法", 10, 200, 20.0), weighted("file:乙.md", 5, 50, 20.0)])
    manifest.mark_indexing({"file:丙.md": "h"})
    assert manifest.corpus() == (15, 250)
    assert manifest.corpus(exclude={"file:乙.md", "file:未知.md"}) == (10, 200)
    assert manifest.corpus(exclude=frozenset({"law:甲法", "file:乙.md"})) == (0, 0)


def test_stale_weights_are_unweighted_other_parameters_or_drifted(manifest: SourceManifest) -> None:
    """Four complete sources of 10 articles and length 200: the collection's average length is 20."""
    manifest.mark_complete([
        weighted("file:fresh.md", 10, 200, 20.0),
        weighted("file:other_k1.md", 10, 200, 20.0, k1=2.0),
        completed("file:never.md", "h", 10, "e5", 200),  # an older store: raw term frequencies
        weighted("file:drifted.md", 10, 200, 25.0),  # 25 % off
        weighted("file:empty.md", 0, 0, 0.0),  # no articles: nothing to weight
    ])
    manifest.mark_indexing({"file:writing.md": "h"})
    stale = {r.source for r in manifest.stale_weights(K1, B, max_drift=0.2)}
    assert stale == {"file:other_k1.md", "file:never.md", "file:drifted.md"}
    assert "file:drifted.md" not in {r.source for r in manifest.stale_weights(K1, B, max_drift=0.25)}  # not beyond
    assert {r.source for r in manifest.stale_weights(K1, 0.5, max_drift=1.0)} == {
        "file:fresh.md", "file:other_k1.md", "file:never.md", "file:drifted.md"}  # another b: all of them


def test_a_manifest_without_sources_has_nothing_stale(manifest: SourceManifest) -> None:
    assert manifest.stale_weights(K1, B, max_drift=0.1) == []
    assert manifest.corpus() == (0, 0) and manifest.all() == [] and manifest.incomplete() == []


def test_unversioned_sources_are_complete_statutes_without_a_metadata_fingerprint(manifest: SourceManifest) -> None:
    manifest.mark_complete([completed("law:旧法", "h", 3), completed("law:新法", "h", 3, meta_hash="m"),
                            completed("file:手册.md", "h", 3)])
    manifest.mark_indexing({"law:在写的法": "h"})
    assert [r.source for r in manifest.unversioned()] == ["law:旧法"]


def test_other_embeddings_are_complete_sources_another_embedder_made(manifest: SourceManifest) -> None:
    manifest.mark_complete([completed("law:甲法", "h", 3, "e5"), completed("law:乙法", "h", 3, "bge"),
                            completed("file:丙.md", "h", 3)])
    manifest.mark_indexing({"law:丁法": "h"}, embedding="bge")
    assert [r.source for r in manifest.other_embeddings("e5")] == ["file:丙.md", "law:乙法"]
    assert [r.source for r in manifest.other_embeddings("bge")] == ["file:丙.md", "law:甲法"]


def test_relabelled_and_reweighted_change_only_their_fields(manifest: SourceManifest) -> None:
    old = replace(weighted("law:甲法", 10, 200, 20.0, meta_hash="m1"), updated_at=1.0)
    manifest.mark_complete([old])
    manifest.relabelled(old, "m2")
    relabelled = manifest.get("law:甲法")
    assert relabelled.meta_hash == "m2" and relabelled.updated_at > 1.0
    assert replace(relabelled, meta_hash="m1", updated_at=1.0) == old
    manifest.reweighted(relabelled, 260, (2.0, 0.5, 26.0))
    reweighted = manifest.get("law:甲法")
    assert (reweighted.length, reweighted.bm25_k1, reweighted.bm25_b, reweighted.bm25_avgdl) == (260, 2.0, 0.5, 26.0)
    assert reweighted.weighted_with(2.0, 0.5) and not reweighted.weighted_with(K1, B)
    assert (reweighted.meta_hash, reweighted.count, reweighted.content_hash) == ("m2", 10, "h")


def test_weighted_with_needs_an_average_length() -> None:
    assert weighted("law:甲法", 1, 1, 1.0).weighted_with(K1, B)
    assert not weighted("law:甲法", 1, 1, 0.0).weighted_with(K1, B)  # k1 and b match, but never weighted
    assert not completed("law:甲法", "h", 1).weighted_with(0.0, 0.0)


def test_remove_and_drop(manifest: SourceManifest, store: QdrantEdgeDocumentStore) -> None:
    manifest.mark_complete([completed("law:甲法", "h", 3), completed("law:乙法", "h", 3)])
    manifest.remove("law:甲法")
    assert [r.source for r in SourceManifest(store).all()] == ["law:乙法"]
    manifest.drop()
    assert SourceManifest(store).all() == []
