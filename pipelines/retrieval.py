"""The retrieval sub-pipeline: queries → exact-citation lookup, BM25 and/or dense per query → RRF → reranker.

The pipeline takes a list of queries from the start (the original first, then rewrites); every path retrieves
for every query and `RRFJoiner` fuses all rankings, deduplicated by article key. With a reranker the joiner hands
it the fused top ``RERANK_POOL`` (default 50) and the reranker keeps ``top_k``: a reranker that saw only the
``top_k`` it returns could reorder them but never bring in the gold ranked just below the cut.

Usage::

    pipeline = build_retrieval_pipeline(store, settings, mode="hybrid")
    docs = retrieve(pipeline, ["公司收集我的个人信息需要我同意吗"], top_k=5)
"""

from __future__ import annotations

from typing import Any

from haystack import Document, Pipeline

from components.joiners.rrf_joiner import RRFJoiner
from components.rankers.evaluator_ranker import EvaluatorRanker
from components.rankers.llm_listwise_ranker import LLMListwiseRanker
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from components.rankers.round_ranker import RoundRanker
from components.retrievers.citation_lookup import CitationLookup
from components.retrievers.dense_retriever import DenseRetriever
from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from helpers.records.contracts import RERANKER, RETRIEVAL_PATHS, ROUND_RANKER, RetrievalPath
from llm_access.factory import uses_api_model
from pipelines.embedders import text_embedder

MODES = ("bm25", "dense", "hybrid")
RERANKERS = ("auto", "none", "llm", "llm-listwise", "cross-encoder", "evaluator")
ROUND_RERANKERS = ("none", "llm")
ROUND_PASSAGE_CHARS = 160  # what research/reports/round2_rerank_study.md measured; most articles are shorter
CANDIDATES_PER_PATH = 100  # research/reports/fusion_study.md: depth 100 keeps R@10, raises R@100 (0.804 → 0.817)
# An exact citation (“民法典第1032条”) is what the user asked for: it outranks anything a search path finds.
PATH_WEIGHTS = {"citation": 100.0}
LISTWISE_PASSAGE_CHARS = 80  # label + first sentences (benchmarks/reports/pair_reading.md)
API_RERANK_WORKERS = 8  # an API model scores the candidates concurrently


def resolve_reranker(settings: Settings) -> str:
    """The reranker ``RERANKER`` names, ``auto`` resolved: with an API model (DeepSeek, ``LLM_BASE_URL``) the
    pointwise LLM reranker, its calls concurrent; with the embedded 1.5B LLM none, because neither of its pair
    readers beat the fused order on real questions (`benchmarks/reports/pair_reading.md`: the pointwise one lost
    0.10 MRR@10 at 33 s a question, the listwise one 0.10 at 15 s)."""
    if settings.reranker not in RERANKERS:
        raise ValueError(f"RERANKER must be one of {RERANKERS}, got {settings.reranker!r}")
    if settings.reranker == "auto":
        return "llm" if uses_api_model(settings) else "none"
    return settings.reranker


def make_reranker(settings: Settings, top_k: int = 10) -> Any:
    """The configured reranker component, keeping ``top_k`` of the pool it reorders, or None for ``RERANKER=none``."""
    reranker = resolve_reranker(settings)
    if reranker == "llm":
        workers = API_RERANK_WORKERS if uses_api_model(settings) else 1  # the embedded server answers one by one
        return LLMRelevanceRanker(top_n=settings.rerank_top_n, top_k=top_k, max_workers=workers)
    if reranker == "llm-listwise":
        return LLMListwiseRanker(top_n=settings.rerank_top_n, max_chars=LISTWISE_PASSAGE_CHARS, top_k=top_k)
    if reranker == "evaluator":
        return EvaluatorRanker(model=settings.evaluator_model, top_n=max(settings.rerank_top_n, 20), top_k=top_k)
    if reranker == "cross-encoder":  # imported here: it brings torch, which nothing else served needs
        from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersSimilarityRanker

        return SentenceTransformersSimilarityRanker(model=settings.reranker_model, top_k=top_k,
                                                    meta_fields_to_embed=["law"])
    return None


def reports_rerank(reranker: Any) -> bool:
    """Whether a reranker gives a ``rerank`` output (its LLM calls and seconds) for the round's trace."""
    return isinstance(reranker, LLMRelevanceRanker | LLMListwiseRanker)


def reads_llm_logprobs(settings: Settings) -> bool:
    """Whether a ranker these settings build reads the LLM's logprobs (`LLMRelevanceRanker`, in round 1 or from
    round 2 on): the embedded LLM must then be started with them."""
    return resolve_reranker(settings) == "llm" or settings.round_reranker == "llm"


def make_round_ranker(document_store: KnowledgeBaseStore, settings: Settings, top_k: int = 10) -> RoundRanker | None:
    """The agentic loop's widen-and-rerank step from round 2 on (`RoundRanker`), or None for ``ROUND_RERANKER=none``."""
    if settings.round_reranker not in ROUND_RERANKERS:
        raise ValueError(f"ROUND_RERANKER must be one of {ROUND_RERANKERS}, got {settings.round_reranker!r}")
    if settings.round_reranker == "none":
        return None
    return RoundRanker(document_store=document_store, ranker=LLMRelevanceRanker(max_chars=ROUND_PASSAGE_CHARS),
                       depth=max(settings.round_rerank_depth, top_k), top_k=top_k)


def add_retrieval(
    pipeline: Pipeline,
    document_store: KnowledgeBaseStore,
    settings: Settings,
    mode: str = "hybrid",
    top_k: int = 10,
    reranker: Any = None,
) -> None:
    """Add the retrieval components (``citation``, ``bm25``, ``dense``, ``joiner``, ``reranker``) to a pipeline."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    candidates = max(CANDIDATES_PER_PATH, top_k)
    fused = max(top_k, settings.rerank_pool) if reranker is not None else top_k
    pipeline.add_component(RetrievalPath.CITATION.value, CitationLookup(document_store=document_store))
    pipeline.add_component("joiner", RRFJoiner(top_k=fused, path_weights={**PATH_WEIGHTS, "bm25": settings.bm25_weight},
                                               primary_weight=settings.question_weight))
    pipeline.connect(f"{RetrievalPath.CITATION}.rankings", "joiner.rankings")
    if mode in ("bm25", "hybrid"):
        pipeline.add_component(RetrievalPath.BM25.value, JiebaBM25Retriever(
            document_store=document_store, top_k=candidates))
        pipeline.connect(f"{RetrievalPath.BM25}.rankings", "joiner.rankings")
    if mode in ("dense", "hybrid"):
        dense = DenseRetriever(document_store=document_store, embedder=text_embedder(settings), top_k=candidates)
        pipeline.add_component(RetrievalPath.DENSE.value, dense)
        pipeline.connect(f"{RetrievalPath.DENSE}.rankings", "joiner.rankings")
    if reranker is not None:
        pipeline.add_component(RERANKER, reranker)
        pipeline.connect("joiner.documents", f"{RERANKER}.documents")
        pipeline.metadata["top_k"] = top_k  # what the reranker keeps when a run does not say


def has_reranker(pipeline: Pipeline) -> bool:
    return RERANKER in pipeline.graph.nodes


def evidence_output(pipeline: Pipeline) -> str:
    """The component whose ``documents`` are a query pipeline's retrieved evidence: the reranker, if any."""
    return RERANKER if has_reranker(pipeline) else "joiner"


def build_retrieval_pipeline(document_store: KnowledgeBaseStore, settings: Settings, **options: Any) -> Pipeline:
    """Citation lookup + BM25 (jieba) and/or dense retrieval of every query, RRF-fused, optionally reranked;
    ``options`` are `add_retrieval`'s (``mode``, ``top_k``, ``reranker``)."""
    pipeline = Pipeline()
    add_retrieval(pipeline, document_store, settings, **options)
    return pipeline


def depth_inputs(pipeline: Pipeline, top_k: int | None) -> dict[str, dict[str, Any]]:
    """``pipeline.run`` data that sets how many articles a query returns: the joiner's cut, or with a reranker the
    reranker's, the joiner then fusing the larger of ``top_k`` and its pool (``RERANK_POOL``). With a round ranker
    (the agentic loop) it keeps ``top_k``, and what comes before it returns the ranker's pool depth."""
    data: dict[str, dict[str, Any]] = {}
    if ROUND_RANKER in pipeline.graph.nodes:
        round_ranker = pipeline.get_component(ROUND_RANKER)
        top_k = top_k or round_ranker.top_k
        data[ROUND_RANKER] = {"top_k": top_k}
        top_k = max(top_k, round_ranker.depth)
    if not has_reranker(pipeline):
        return data | ({"joiner": {"top_k": top_k}} if top_k else {})
    top_k = top_k or pipeline.metadata.get("top_k")
    pool = pipeline.get_component("joiner").top_k
    return data | {"joiner": {"top_k": max(top_k or pool, pool)}, RERANKER: {"top_k": top_k}}


def retrieval_inputs(
    pipeline: Pipeline, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """``pipeline.run`` data for the retrieval components; ``queries[0]`` is the question the joiner favours."""
    data: dict[str, dict[str, Any]] = depth_inputs(pipeline, top_k)
    data.setdefault("joiner", {})["primary_query"] = queries[0] if queries else None
    for path in RETRIEVAL_PATHS:
        if path in pipeline.graph.nodes:
            data[path] = {"queries": queries, "filters": filters}
    return data


def retrieve(
    pipeline: Pipeline, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None
) -> list[Document]:
    """Run a pipeline built by `build_retrieval_pipeline` for a list of queries (the original first)."""
    data = retrieval_inputs(pipeline, queries, top_k, filters)
    if has_reranker(pipeline):
        data.setdefault(RERANKER, {})["query"] = queries[0]
    return pipeline.run(data)[evidence_output(pipeline)]["documents"]
