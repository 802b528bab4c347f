"""`pipelines.retrieval`: how the retrieval sub-pipeline is wired per mode and reranker, and the run data that sets
its depth (what its paths find, the reranker's pool and the rerankers' choice by settings are in
components/retrievers/test_retrieval_paths.py and test_rerankers.py)."""

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from haystack import Pipeline

from components.rankers.evaluator_ranker import EvaluatorRanker
from components.rankers.llm_listwise_ranker import LLMListwiseRanker
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from components.rankers.round_ranker import RoundRanker
from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from helpers.records.contracts import RERANKER, ROUND_RANKER
from pipelines.retrieval import (
    CANDIDATES_PER_PATH,
    ROUND_PASSAGE_CHARS,
    build_retrieval_pipeline,
    depth_inputs,
    evidence_output,
    has_reranker,
    make_reranker,
    make_round_ranker,
    reports_rerank,
    retrieval_inputs,
    retrieve,
)
from pipelines.stores import open_document_store

FILTER = {"field": "meta.law", "operator": "==", "value": "示例交通法"}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """An empty store and a model folder that exists (nothing here loads the model)."""
    root = tmp_path_factory.mktemp("retrieval")
    (root / "e5").mkdir()
    return Settings(qdrant_path=root / "qdrant", embedding_model=str(root / "e5"), rerank_pool=50,
                    round_rerank_depth=30)


@pytest.fixture(scope="module")
def store(settings: Settings) -> Iterator[KnowledgeBaseStore]:
    store = open_document_store(settings)
    yield store
    store.close()


def edges(pipeline: Pipeline) -> set[tuple[str, str]]:
    return {(sender, receiver) for sender, receiver, _ in pipeline.graph.edges}


@pytest.mark.parametrize(("mode", "paths"), [("bm25", {"bm25"}), ("dense", {"dense"}),
                                             ("hybrid", {"bm25", "dense"})])
def test_every_mode_has_the_citation_lookup_and_its_paths_all_feeding_the_joiner(
        store: KnowledgeBaseStore, settings: Settings, mode: str, paths: set[str]) -> None:
    pipeline = build_retrieval_pipeline(store, settings, mode=mode, top_k=5)
    assert set(pipeline.graph.nodes) == {"citation", "joiner"} | paths
    assert edges(pipeline) == {(path, "joiner") for path in {"citation"} | paths}
    assert not has_reranker(pipeline) and evidence_output(pipeline) == "joiner"
    for path in paths:  # each path returns a deep list for the fusion, whatever the cut
        assert pipeline.get_component(path).top_k == CANDIDATES_PER_PATH
    assert pipeline.get_component("joiner").top_k == 5


def test_an_unknown_mode_lists_the_modes(store: KnowledgeBaseStore, settings: Settings) -> None:
    with pytest.raises(ValueError, match=r"^mode must be one of \('bm25', 'dense', 'hybrid'\), got 'sparse'$"):
        build_retrieval_pipeline(store, settings, mode="sparse")


def test_the_fusion_weights_come_from_settings(store: KnowledgeBaseStore, settings: Settings) -> None:
    """An exact citation outranks every search path; BM25 and the question's own weight are settings."""
    joiner = build_retrieval_pipeline(store, dataclasses.replace(settings, bm25_weight=0.3, question_weight=4.0),
                                      mode="bm25").get_component("joiner")
    assert joiner.path_weights == {"citation": 100.0, "bm25": 0.3} and joiner.primary_weight == 4.0


def test_a_path_cut_deeper_than_its_candidates_keeps_top_k(store: KnowledgeBaseStore, settings: Settings) -> None:
    pipeline = build_retrieval_pipeline(store, settings, mode="bm25", top_k=CANDIDATES_PER_PATH + 20)
    assert pipeline.get_component("bm25").top_k == CANDIDATES_PER_PATH + 20


def test_a_reranker_reorders_the_fused_pool_and_gives_the_evidence(store: KnowledgeBaseStore,
                                                                   settings: Settings) -> None:
    ranker = LLMListwiseRanker(top_k=5)
    pipeline = build_retrieval_pipeline(store, settings, mode="bm25", top_k=5, reranker=ranker)
    assert edges(pipeline) >= {("joiner", RERANKER)} and pipeline.get_component(RERANKER) is ranker
    assert has_reranker(pipeline) and evidence_output(pipeline) == RERANKER
    assert pipeline.get_component("joiner").top_k == 50 and pipeline.metadata["top_k"] == 5
    deep = build_retrieval_pipeline(store, settings, mode="bm25", top_k=80, reranker=LLMListwiseRanker())
    assert deep.get_component("joiner").top_k == 80  # a pool never smaller than what the reranker keeps


def test_the_depth_without_a_reranker_is_the_joiners_cut(store: KnowledgeBaseStore, settings: Settings) -> None:
    pipeline = build_retrieval_pipeline(store, settings, mode="bm25", top_k=5)
    assert depth_inputs(pipeline, 7) == {"joiner": {"top_k": 7}}
    assert depth_inputs(pipeline, None) == {}  # the cut it was built with


@pytest.mark.parametrize(("top_k", "joiner", "reranker"), [(None, 50, 5), (8, 50, 8), (70, 70, 70)])
def test_the_depth_with_a_reranker_is_its_cut_over_a_pool_at_least_as_deep(
        store: KnowledgeBaseStore, settings: Settings, top_k: int | None, joiner: int, reranker: int) -> None:
    pipeline = build_retrieval_pipeline(store, settings, mode="bm25", top_k=5, reranker=LLMListwiseRanker())
    assert depth_inputs(pipeline, top_k) == {"joiner": {"top_k": joiner}, RERANKER: {"top_k": reranker}}


def test_with_a_round_ranker_what_comes_before_it_returns_its_depth(store: KnowledgeBaseStore,
                                                                    settings: Settings) -> None:
    """The agentic loop's round ranker keeps ``top_k`` of at least ``ROUND_RERANK_DEPTH`` articles."""
    pipeline = build_retrieval_pipeline(store, settings, mode="bm25", top_k=5)
    round_ranker = make_round_ranker(store, dataclasses.replace(settings, round_reranker="llm"), top_k=6)
    pipeline.add_component(ROUND_RANKER, round_ranker)
    assert depth_inputs(pipeline, 4) == {ROUND_RANKER: {"top_k": 4}, "joiner": {"top_k": 30}}
    assert depth_inputs(pipeline, None) == {ROUND_RANKER: {"top_k": 6}, "joiner": {"top_k": 30}}
    assert depth_inputs(pipeline, 40) == {ROUND_RANKER: {"top_k": 40}, "joiner": {"top_k": 40}}


def test_every_path_gets_every_query_and_the_filters(store: KnowledgeBaseStore, settings: Settings) -> None:
    pipeline = build_retrieval_pipeline(store, settings, mode="hybrid", top_k=5)
    queries = ["汽车可以随便停吗", "机动车停放"]
    data = retrieval_inputs(pipeline, queries, top_k=3, filters=FILTER)
    assert data == {"joiner": {"top_k": 3, "primary_query": "汽车可以随便停吗"},
                    **{path: {"queries": queries, "filters": FILTER} for path in ("citation", "bm25", "dense")}}
    assert retrieval_inputs(pipeline, [])["joiner"] == {"primary_query": None}


def test_an_empty_knowledge_base_retrieves_nothing(store: KnowledgeBaseStore, settings: Settings) -> None:
    pipeline = build_retrieval_pipeline(store, settings, mode="bm25", top_k=5)
    assert retrieve(pipeline, ["机动车应当按规定停放吗", "民法典第十条"], filters=FILTER) == []


def test_the_round_ranker_is_off_unless_asked_for(store: KnowledgeBaseStore, settings: Settings) -> None:
    assert make_round_ranker(store, settings) is None  # ROUND_RERANKER=none, the default
    with pytest.raises(ValueError, match=r"^ROUND_RERANKER must be one of \('none', 'llm'\), got 'evaluator'$"):
        make_round_ranker(store, dataclasses.replace(settings, round_reranker="evaluator"))


@pytest.mark.parametrize(("top_k", "depth"), [(10, 30), (45, 45)])
def test_the_round_ranker_reads_short_passages_at_least_as_deep_as_it_keeps(
        store: KnowledgeBaseStore, settings: Settings, top_k: int, depth: int) -> None:
    ranker = make_round_ranker(store, dataclasses.replace(settings, round_reranker="llm"), top_k=top_k)
    assert isinstance(ranker, RoundRanker) and isinstance(ranker.ranker, LLMRelevanceRanker)
    assert (ranker.depth, ranker.top_k, ranker.ranker.max_chars) == (depth, top_k, ROUND_PASSAGE_CHARS)


def test_the_evaluator_reranker_reads_at_least_twenty_candidates(settings: Settings, tmp_path: Path) -> None:
    ranker = make_reranker(dataclasses.replace(settings, reranker="evaluator", rerank_top_n=5,
                                               evaluator_model=str(tmp_path)), top_k=3)
    assert isinstance(ranker, EvaluatorRanker) and (ranker.model, ranker.top_n, ranker.top_k) == (str(tmp_path), 20, 3)
    assert make_reranker(dataclasses.replace(settings, reranker="evaluator", rerank_top_n=40)).top_n == 40


def test_only_the_llm_rerankers_report_their_calls(tmp_path: Path) -> None:
    assert reports_rerank(LLMRelevanceRanker()) and reports_rerank(LLMListwiseRanker())
    assert not reports_rerank(EvaluatorRanker(model=str(tmp_path))) and not reports_rerank(None)
