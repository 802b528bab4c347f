import pytest
from haystack import Document

from components.joiners.rrf_joiner import RRFJoiner
from helpers.records.ranking import Ranking


def docs(*keys):
    return [Document(content=k, meta={"key": k}, score=10.0 - i) for i, k in enumerate(keys)]


def test_rrf_arithmetic_ranks_start_at_one():
    bm25 = [Ranking("bm25", "q", docs("a", "b", "c"))]
    dense = [Ranking("dense", "q", docs("b", "d"))]
    out = RRFJoiner(k=60, top_k=None).run(rankings=[bm25, dense])["documents"]
    scores = {d.meta["key"]: d.score for d in out}
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)
    assert [d.meta["key"] for d in out] == ["b", "a", "d", "c"]


def test_fuses_across_queries_and_dedupes_by_key_keeping_provenance():
    rankings = [[Ranking("bm25", "原问题", docs("a", "b")), Ranking("bm25", "改写", docs("b", "a"))],
                [Ranking("dense", "原问题", docs("c", "a"))]]
    out = RRFJoiner(top_k=2).run(rankings=rankings)["documents"]
    assert [d.meta["key"] for d in out] == ["a", "b"]
    info = out[0].meta["retrieval"]
    assert info["best_rank"] == 1
    assert info["paths"] == ["bm25", "dense"]
    assert {(h["path"], h["query"], h["rank"]) for h in info["hits"]} == {
        ("bm25", "原问题", 1), ("bm25", "改写", 2), ("dense", "原问题", 2)}


def test_path_weights_and_top_k_override():
    rankings = [[Ranking("bm25", "q", docs("a", "b"))], [Ranking("citation", "q", docs("z"))]]
    out = RRFJoiner(path_weights={"citation": 100.0}).run(rankings=rankings, top_k=1)["documents"]
    assert [d.meta["key"] for d in out] == ["z"]
    assert out[0].score == pytest.approx(100 / 61)


def test_question_outweighs_rewrites_that_agree():
    # three rewrites agree on "x", which the question did not find: equal weights let the rewrites outvote it
    rankings = [[Ranking("bm25", "问题", docs("a", "b"))] + [Ranking("bm25", f"改写{i}", docs("x")) for i in range(3)]]
    equal = RRFJoiner(top_k=None).run(rankings=rankings, primary_query="问题")["documents"]
    weighted = RRFJoiner(top_k=None, primary_weight=4.0).run(rankings=rankings, primary_query="问题")["documents"]
    assert [d.meta["key"] for d in equal] == ["x", "a", "b"]
    assert [d.meta["key"] for d in weighted] == ["a", "b", "x"]
    assert [d.score for d in weighted] == pytest.approx([4 / 61, 4 / 62, 3 / 61])
    # without a primary query every ranking weighs the same, whatever primary_weight is
    unnamed = RRFJoiner(top_k=None, primary_weight=4.0).run(rankings=rankings)["documents"]
    assert [d.score for d in unnamed] == pytest.approx([d.score for d in equal])


def test_tie_broken_by_best_rank():
    out = RRFJoiner(k=0, top_k=None).run(rankings=[[Ranking("x", "q", docs("a", "b", "c", "d", "e", "f"))],
                                                   [Ranking("y", "q", docs("g"))]])["documents"]
    assert [d.meta["key"] for d in out][:2] in (["a", "g"], ["g", "a"])


def test_invalid_parameters():
    with pytest.raises(ValueError, match="k must be"):
        RRFJoiner(k=-1)
    with pytest.raises(ValueError, match="primary_weight"):
        RRFJoiner(primary_weight=0)
