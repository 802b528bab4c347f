"""QdrantEdgeDocumentStore: Haystack's own document-store test suite, the serialisation round trip, the searches the
retrievers make (against qdrant-client's local mode over the same points), and one owner per shard."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import DocumentStoreBaseTests
from haystack.utils.filters import FilterError
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from qdrant_client.http import models as rest

from document_store.edge_filters import edge_filter
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.errors import StoreConfigError, StoreLockedError


def _stripped(documents: list[Document]) -> list[Document]:
    return sorted((Document(id=d.id, content=d.content, meta=d.meta, blob=d.blob) for d in documents),
                  key=lambda d: d.id)


class TestHaystackSuite(DocumentStoreBaseTests):
    """Haystack's `DocumentStoreBaseTests` (count, write with every duplicate policy, delete, every filter)."""

    @pytest.fixture
    def document_store(self, tmp_path: Path):
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "shard"), embedding_dim=768)
        yield store
        store.close()

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        # Qdrant normalises cosine vectors and the store returns none by default; the rest must be equal
        assert _stripped(received) == _stripped(expected)

    # qdrant-haystack's filter converter (the server path's too) refuses a None value; Haystack's suite expects
    # comparisons with None to match missing fields. Refused with a FilterError on both paths.
    @pytest.mark.parametrize("operator", ["==", "!=", ">", ">=", "<", "<="])
    def test_comparison_with_none_is_a_clear_error(self, document_store: QdrantEdgeDocumentStore,
                                                   operator: str) -> None:
        with pytest.raises(FilterError, match="not found"):
            document_store.filter_documents({"field": "meta.number", "operator": operator, "value": None})

    test_comparison_equal_with_none = test_comparison_not_equal_with_none = None
    test_comparison_greater_than_with_none = test_comparison_greater_than_equal_with_none = None
    test_comparison_less_than_with_none = test_comparison_less_than_equal_with_none = None

    def test_write_documents(self, document_store: QdrantEdgeDocumentStore) -> None:
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):  # the default policy (NONE) is FAIL, as the in-memory store
            document_store.write_documents([doc])
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


def test_round_trip_keeps_settings_and_data(tmp_path: Path) -> None:
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4, hnsw_m=8, hnsw_ef=64, exact_below=50,
                                    write_batch_size=7)
    store.write_documents([Document(id="a", content="甲", meta={"law": "民法典"}, embedding=[1.0, 0, 0, 0])])
    data = store.to_dict()
    store.close()
    again = QdrantEdgeDocumentStore.from_dict(data)
    assert again.to_dict() == data
    assert {k: data["init_parameters"][k] for k in ("hnsw_m", "hnsw_ef", "exact_below", "write_batch_size")} \
        == {"hnsw_m": 8, "hnsw_ef": 64, "exact_below": 50, "write_batch_size": 7}
    assert [d.content for d in again.filter_documents({"field": "meta.law", "operator": "==", "value": "民法典"})] \
        == ["甲"]
    again.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"path": " "}, "folder path"), ({"path": "x", "embedding_dim": 0}, "embedding_dim"),
    ({"path": "x", "hnsw_m": -1}, "hnsw_m"), ({"path": "x", "hnsw_ef": 0}, "hnsw_ef"),
    ({"path": "x", "exact_below": -1}, "exact_below"), ({"path": "x", "write_batch_size": 0}, "write_batch_size")])
def test_bad_settings_are_clear_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QdrantEdgeDocumentStore(**kwargs)


def test_a_shard_made_for_other_vectors_is_refused(tmp_path: Path) -> None:
    made = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4)
    assert made.count_documents() == 0  # the shard is made on first use
    made.close()
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=8)
    with pytest.raises(StoreConfigError, match="4-dimensional"):
        store.count_documents()
    with pytest.raises(ValueError, match="dimensions"):
        QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4).query_dense([1.0, 0.0], top_k=1)


def test_a_second_owner_gets_the_store_in_use_error(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = QdrantEdgeDocumentStore(path=str(path), embedding_dim=4)
    store.write_documents([Document(id="a", content="x", embedding=[1.0, 0, 0, 0])])
    script = ("from document_store.edge_store import QdrantEdgeDocumentStore as S\n"
              "from document_store.errors import StoreLockedError\n"
              f"try:\n    S(path={str(path)!r}, embedding_dim=4).count_documents()\n"
              "except StoreLockedError as e:\n    print('LOCKED', e)")
    other = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True,
                           cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert other.stdout.startswith("LOCKED") and "in use" in other.stdout, other.stderr[-500:]
    with pytest.raises(StoreLockedError) as raised:  # a second object in this process too
        QdrantEdgeDocumentStore(path=str(path), embedding_dim=4).count_documents()
    assert isinstance(raised.value, DocumentStoreError)  # what Haystack's callers of a store catch
    store.close()
    reopened = QdrantEdgeDocumentStore(path=str(path), embedding_dim=4)  # released on close, data kept
    assert reopened.count_documents() == 1
    reopened.close()


def _corpus(n: int, dim: int) -> list[Document]:
    rng = random.Random(7)
    docs = []
    for i in range(n):
        terms = sorted(rng.sample(range(50), 4))
        docs.append(Document(
            id=f"d{i}", content=f"第{i}条", meta={"law": f"法{i % 5}", "article_no": i},
            embedding=[rng.gauss(0, 1) for _ in range(dim)],
            sparse_embedding=SparseEmbedding(indices=terms, values=[rng.uniform(0.5, 3) for _ in terms])))
    return docs


def test_searches_rank_as_qdrant_does(tmp_path: Path) -> None:
    """Dense, sparse (IDF in the engine) and filtered searches give qdrant-client's local mode's ranking and
    scores over the same documents, in the layout qdrant-haystack writes."""
    docs = _corpus(200, 8)
    edge = QdrantEdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=8)
    local = QdrantDocumentStore(path=str(tmp_path / "local"), index="c", embedding_dim=8, similarity="cosine",
                                use_sparse_embeddings=True, sparse_idf=True, progress_bar=False)
    assert edge.write_documents(docs) == local.write_documents(docs) == 200
    rng = random.Random(1)
    law = {"field": "meta.law", "operator": "in", "value": ["法1", "法3"]}
    for _ in range(5):
        query = [rng.gauss(0, 1) for _ in range(8)]
        for filters in (None, law):
            ours = edge.query_dense(query, top_k=10, filters=filters)
            theirs = local._query_by_embedding(query_embedding=query, top_k=10, filters=filters)
            assert [d.id for d in ours] == [d.id for d in theirs]
            assert [d.score for d in ours] == pytest.approx([d.score for d in theirs], abs=1e-5)
        sparse = SparseEmbedding(indices=[3, 11, 29], values=[1.0, 1.0, 1.0])
        ours = edge.query_sparse(sparse, top_k=10, filters=law)
        theirs = local._query_by_sparse(query_sparse_embedding=sparse, top_k=10, filters=law)
        assert [d.score for d in ours] == pytest.approx([d.score for d in theirs], rel=1e-5)
        assert {d.id for d in ours} == {d.id for d in theirs}
    assert all(d.meta["law"] in ("法1", "法3") for d in edge.query_dense([1.0] * 8, top_k=50, filters=law))
    assert sorted(edge.facet("meta.law", limit=10)) == [f"法{i}" for i in range(5)]
    edge.close()
    local.close()


def test_points_are_those_qdrant_haystack_writes(tmp_path: Path) -> None:
    """Read back raw, a point has the id, payload and vectors qdrant-haystack's converter gives the document (plus
    the boolean twins)."""
    from haystack_integrations.document_stores.qdrant.converters import convert_haystack_documents_to_qdrant_points

    docs = _corpus(3, 4)
    docs[0].meta["in_force"] = True
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4)
    store.write_documents(docs)
    theirs = {p.id: p for p in convert_haystack_documents_to_qdrant_points(docs, use_sparse_embeddings=True)}
    for record in store.shard.retrieve(list(theirs), with_payload=True, with_vector=True):
        expected = theirs[record.id.hex]
        payload = dict(record.payload)
        assert payload.pop("_edge_bool", None) == ({"in_force": 1} if expected.payload["id"] == "d0" else None)
        assert payload == expected.payload
        sparse = record.vector["text-sparse"]
        assert (list(sparse.indices), list(sparse.values)) == (expected.vector["text-sparse"].indices,
                                                               pytest.approx(expected.vector["text-sparse"].values))
        norm = sum(x * x for x in expected.vector["text-dense"]) ** 0.5  # cosine vectors are stored normalised
        assert record.vector["text-dense"] == pytest.approx([x / norm for x in expected.vector["text-dense"]],
                                                            abs=1e-6)
    store.close()


def test_a_graph_is_built_from_exact_below_on(tmp_path: Path) -> None:
    """Below ``exact_below`` articles `optimize()` leaves the dense vectors without a graph (exact search); from it
    on it builds one, which a reopened store keeps and searches (top hit still the query's own vector)."""
    docs = _corpus(120, 8)
    small = QdrantEdgeDocumentStore(path=str(tmp_path / "small"), embedding_dim=8, exact_below=200)
    small.write_documents(docs)
    small.optimize()
    assert small.shard.info().indexed_vectors_count == 120  # the sparse index only
    small.close()
    large = QdrantEdgeDocumentStore(path=str(tmp_path / "large"), embedding_dim=8, exact_below=100)
    large.write_documents(docs)
    large.optimize()
    large.close()
    again = QdrantEdgeDocumentStore(path=str(tmp_path / "large"), embedding_dim=8, exact_below=100)
    assert again.shard.info().indexed_vectors_count == 240  # sparse + the dense graph
    assert [again.query_dense(d.embedding, top_k=1)[0].id for d in docs[:20]] == [d.id for d in docs[:20]]
    again.close()


def test_unsupported_filters_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FilterError, match="MatchText"):
        edge_filter(rest.Filter(must=[rest.FieldCondition(key="content", match=rest.MatchText(text="x"))]))
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4)
    with pytest.raises(FilterError, match="top-level 'operator'"):
        store.filter_documents({"law": "民法典"})
    with pytest.raises(ValueError, match="top_k"):
        store.query_dense([1.0, 0, 0, 0], top_k=0)
    store.close()


def test_writes_in_batches_survive_a_reopen(tmp_path: Path) -> None:
    docs = _corpus(23, 4)
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4, write_batch_size=5)
    assert store.write_documents(docs[:10]) == 10
    assert store.write_documents(docs, policy=DuplicatePolicy.SKIP) == 13
    store.delete_documents(["d0", "d1", "missing"])
    store.close()
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4)
    assert store.count_documents() == 21
    assert {d.id for d in store.get_documents_by_id(["d0", "d2"])} == {"d2"}
    store.close()


def test_boolean_conditions_match(tmp_path: Path) -> None:
    """``in_force != False`` (every search's version filter) drops superseded versions and keeps unversioned
    documents; ``== True`` keeps only those marked in force. Read back, the meta is as written."""
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4)
    docs = [Document(id="now", content="a", meta={"in_force": True}, embedding=[1.0, 0, 0, 0]),
            Document(id="old", content="b", meta={"in_force": False}, embedding=[1.0, 0.1, 0, 0]),
            Document(id="file", content="c", meta={"law": "手册"}, embedding=[1.0, 0.2, 0, 0])]
    store.write_documents(docs)
    current = {"field": "meta.in_force", "operator": "!=", "value": False}
    assert {d.id for d in store.filter_documents(current)} == {"now", "file"}
    assert {d.id for d in store.query_dense([1.0, 0, 0, 0], top_k=3, filters=current)} == {"now", "file"}
    assert [d.id for d in store.filter_documents({"field": "meta.in_force", "operator": "==", "value": True})] \
        == ["now"]
    assert _stripped(store.filter_documents()) == _stripped(docs)
    store.close()


def test_values_count_and_geo_conditions_filter_a_real_shard(tmp_path: Path) -> None:
    import qdrant_edge as edge

    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4)
    store.write_documents([
        Document(id="twice", content="a", meta={"amended_by": ["甲", "乙"], "place": {"lon": 116.4, "lat": 39.9}},
                 embedding=[1.0, 0, 0, 0]),
        Document(id="once", content="b", meta={"amended_by": ["甲"], "place": {"lon": 121.5, "lat": 31.2}},
                 embedding=[1.0, 0.1, 0, 0])])

    def count(condition: rest.FieldCondition) -> int:
        return store.shard.count(edge.CountRequest(exact=True, filter=edge_filter(rest.Filter(must=[condition]))))

    assert count(rest.FieldCondition(key="meta.amended_by", values_count=rest.ValuesCount(gte=2))) == 1
    assert count(rest.FieldCondition(key="meta.amended_by", values_count=rest.ValuesCount(lte=2))) == 2
    near_beijing = rest.GeoRadius(center=rest.GeoPoint(lon=116.4, lat=39.9), radius=1000.0)
    assert count(rest.FieldCondition(key="meta.place", geo_radius=near_beijing)) == 1
    store.close()


def test_canary_the_binding_still_cannot_match_booleans(tmp_path: Path) -> None:
    """When this fails, qdrant-edge-py matches booleans itself: drop BOOL_TWINS from document_store/edge_filters.py."""
    import qdrant_edge as edge

    shard = edge.EdgeShard.create(str(tmp_path / "raw"), edge.EdgeConfig(
        vectors={"d": edge.EdgeVectorParams(size=2, distance=edge.Distance.Cosine)}))
    shard.update(edge.UpdateOperation.upsert_points([edge.Point(1, {"d": [1.0, 0.0]}, {"f": True})]))
    matched = shard.count(edge.CountRequest(exact=True, filter=edge.Filter(
        must=[edge.FieldCondition("f", match=edge.MatchValue(True))])))
    shard.close()
    assert matched == 0


def test_searches_never_return_a_stale_cached_document(tmp_path: Path) -> None:
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4, cache_size=2)
    docs = [Document(id=f"d{i}", content=f"旧{i}", embedding=[1.0, 0.1 * i, 0, 0]) for i in range(3)]
    store.write_documents(docs)
    assert [d.content for d in store.query_dense([1.0, 0, 0, 0], top_k=3)] == ["旧0", "旧1", "旧2"]
    store.write_documents([Document(id="d1", content="新1", embedding=[1.0, 0.1, 0, 0])],
                          policy=DuplicatePolicy.OVERWRITE)
    store.delete_documents(["d2"])
    again = store.query_dense([1.0, 0, 0, 0], top_k=3)
    assert [d.content for d in again] == ["旧0", "新1"]
    assert all(d.score is not None and d.score > 0.9 for d in again)
    assert len(store._cache) <= 2  # bounded
    store.close()


def test_preloading_fills_the_cache_once_and_stays_current(tmp_path: Path) -> None:
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4, cache_size=3)
    store.write_documents([Document(id=f"d{i}", content=f"旧{i}", embedding=[1.0, 0.1 * i, 0, 0]) for i in range(5)])
    store.preload()
    assert len(store._cache) == 3  # bounded by cache_size
    store.write_documents([Document(id="d0", content="新0", embedding=[1.0, 0, 0, 0])],
                          policy=DuplicatePolicy.OVERWRITE)
    store.preload()  # once per store object: nothing re-read, nothing stale kept
    assert [d.content for d in store.query_dense([1.0, 0, 0, 0], top_k=2)] == ["新0", "旧1"]
    store.close()


def test_dropping_the_cache_empties_it_and_the_next_preload_fills_it_again(tmp_path: Path) -> None:
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4, cache_size=3)
    store.write_documents([Document(id=f"d{i}", content=f"文{i}", embedding=[1.0, 0.1 * i, 0, 0]) for i in range(5)])
    store.preload()
    assert len(store._cache) == 3
    store.drop_cache()
    assert len(store._cache) == 0
    assert [d.content for d in store.query_dense([1.0, 0, 0, 0], top_k=2)] == ["文0", "文1"]  # read from the shard
    store.preload()
    assert len(store._cache) == 3
    store.close()


def test_cached_documents_share_their_repeated_meta_strings(tmp_path: Path) -> None:
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4, cache_size=10)
    law = "中华人民共和国个人信息保护法"
    store.write_documents([Document(id=f"d{i}", content=f"第{i}条", meta={"law": law, "note": "长" * 65},
                                    embedding=[1.0, 0.1 * i, 0, 0]) for i in range(3)])
    store.preload()
    first, second, _ = store.query_dense([1.0, 0, 0, 0], top_k=3)
    assert first.meta == {"law": law, "note": "长" * 65} and first.content == "第0条"
    assert first.meta["law"] is second.meta["law"]  # one string for every document of the law
    assert first.meta["note"] is not second.meta["note"]  # long values are not worth interning
    store.close()


def test_the_search_beam_widens_with_the_number_of_articles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from document_store import edge_sizing

    assert edge_sizing.search_ef(23_995) == 512 and edge_sizing.search_ef(1_000_000) == 1024
    monkeypatch.setattr(edge_sizing, "WIDER_EF_FROM", 5)
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=4)
    store.write_documents([Document(id=f"d{i}", content=f"第{i}条", embedding=[1.0, 0.1 * i, 0, 0]) for i in range(3)])
    assert store._ef_by_size() == 512
    store.write_documents([Document(id=f"e{i}", content=f"第{i}条", embedding=[0, 1.0, 0.1 * i, 0]) for i in range(3)])
    assert store._ef_by_size() == 1024  # recounted after the write
    assert store.query_dense([1.0, 0, 0, 0], top_k=1)[0].id == "d0"
    store.close()
