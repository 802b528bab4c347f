"""Builders of the agentic query pipeline (route → rewrite → retrieve → judge → loop or web search → cited
answer) and of the plain RAG baseline over the same components.

Usage::

    from pipelines.agentic import build_agentic_pipeline
    pipeline = build_agentic_pipeline(store, settings)
    pipeline.warm_up()
    # application.rag.answer_with(pipeline, "agentic", "公司收集我的个人信息需要我同意吗") runs it
"""

from __future__ import annotations

from typing import Any

from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.joiners import BranchJoiner
from haystack.components.routers import ConditionalRouter

from components.builders.answer_finalizer import AnswerFinalizer
from components.builders.evidence_selector import EvidenceSelector
from components.generators.answer_generator import AnswerGenerator
from components.generators.query_rewriter import QueryRewriter
from components.joiners.web_evidence_merger import WebEvidenceMerger
from components.routers.query_router import QueryRouter
from components.routers.round_tracker import RoundTracker
from components.websearch.serpapi_web_search import SerpAPIWebSearch
from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from helpers.records.contracts import RERANKER, RETRIEVAL_PATHS, ROUND_RANKER
from helpers.records.rounds import Round
from pipelines.judges import make_coverage_check, make_judge
from pipelines.prompts import ANSWER_TEMPLATE
from pipelines.retrieval import (
    add_retrieval,
    evidence_output,
    has_reranker,
    make_reranker,
    make_round_ranker,
    reports_rerank,
)


def loop_routes(max_rounds: int) -> list[dict[str, Any]]:
    """pass → answer; the knowledge base lacks the decisive rule (uncovered) → web search at once; fail, rounds
    left and improving → rewrite again; otherwise → web search."""
    def web() -> dict[str, Any]:  # a fresh route body each time (a shared one would dump as YAML anchors)
        return {"output": ["query", "rounds"], "output_name": ["web_query", "web_rounds"],
                "output_type": [str, list[Round]], "output_passthrough": True}

    return [
        {"condition": "{{ passed }}", "output": "rounds", "output_name": "passed_rounds",
         "output_type": list[Round], "output_passthrough": True},
        {"condition": "{{ uncovered }}", **web()},
        {"condition": f"{{{{ improved and round < {max_rounds} }}}}", "output": ["query", "rounds"],
         "output_name": ["retry_query", "retry_rounds"], "output_type": [str, list[Round]],
         "output_passthrough": True},
        {"condition": "{{ True }}", **web()},
    ]


def link(pipeline: Pipeline, sender: str, receivers: list[str], *sockets: str) -> None:
    """Connect each of ``sender``'s ``sockets`` to the socket of the same name on every receiver."""
    for socket in sockets:
        for receiver in receivers:
            pipeline.connect(f"{sender}.{socket}", f"{receiver}.{socket}")


def add_answer_stage(pipeline: Pipeline, settings: Settings) -> None:
    """Selector → prompt → answer → finalizer: the selector reads the query and the evidence candidates (sockets
    ``selector.rounds`` / ``selector.documents`` and ``selector.web``, connected by the caller, who connects the same
    to the finalizer's for the trace); gives ``finalizer.result``."""
    pipeline.add_component("selector", EvidenceSelector(max_local=settings.evidence_top_n,
                                                        max_local_unsure=settings.evidence_top_n_unsure))
    pipeline.add_component("prompt", ChatPromptBuilder(template=ANSWER_TEMPLATE,
                                                       required_variables=["query", "evidence", "situation"]))
    pipeline.add_component("answer", AnswerGenerator())
    pipeline.add_component("finalizer", AnswerFinalizer())
    # the answer is written from the evidence, and checked (by the generator as it streams, then the finalizer)
    # against the same evidence
    link(pipeline, "selector", ["prompt", "answer", "finalizer"], "evidence", "query", "situation")
    link(pipeline, "selector", ["prompt"], "notes")
    link(pipeline, "selector", ["answer", "finalizer"], "preface")  # streamed first, then kept first
    pipeline.connect("prompt.prompt", "answer.messages")
    link(pipeline, "answer", ["finalizer"], "text", "error", "llm_calls", "seconds", "removed", "cut_off")


def build_agentic_pipeline(document_store: KnowledgeBaseStore, settings: Settings, top_k: int = 10,
                           require_models: bool = True) -> Pipeline:
    """The full loop as one serialisable Pipeline (docs/agentic-loop.md); ``require_models=False`` builds it even
    where the trained models it names are not there yet (YAML export)."""
    pipeline = Pipeline(max_runs_per_component=settings.max_rounds + 2)
    pipeline.add_component("router", QueryRouter())
    pipeline.add_component("query_joiner", BranchJoiner(str))
    pipeline.add_component("rewriter", QueryRewriter(rewrite_first_round=settings.rewrite_first_round,
                                                        long_question_chars=settings.long_question_chars))
    round_ranker = make_round_ranker(document_store, settings, top_k)
    reranker = make_reranker(settings, round_ranker.depth if round_ranker else top_k)
    add_retrieval(pipeline, document_store, settings, top_k=round_ranker.depth if round_ranker else top_k,
                  reranker=reranker)
    evidence = evidence_output(pipeline)
    if round_ranker is not None:  # from round 2 on, the failed pool is widened and read pair by pair
        pipeline.add_component(ROUND_RANKER, round_ranker)
        pipeline.connect(f"{evidence}.documents", f"{ROUND_RANKER}.documents")
        evidence = ROUND_RANKER
    pipeline.add_component("judge", make_judge(settings, require_model=require_models))
    coverage = make_coverage_check(settings, document_store, require_model=require_models)
    if coverage is not None:  # the judge's verdict, read again with the question: is the rule in the corpus at all?
        pipeline.add_component("coverage", coverage)
    pipeline.add_component("tracker", RoundTracker())
    pipeline.add_component("loop", ConditionalRouter(routes=loop_routes(settings.max_rounds)))
    pipeline.add_component("web_search", SerpAPIWebSearch())
    pipeline.add_component("web_merger", WebEvidenceMerger())
    pipeline.add_component("rounds_joiner", BranchJoiner(list[Round]))
    add_answer_stage(pipeline, settings)

    # a round: the question (first from the router, then from the loop) is rewritten, searched on every path and
    # judged; the tracker records the round and the loop router decides where it goes next. What travels round the
    # loop is the list of rounds so far (immutable records, `helpers.records.rounds`), read by the rewriter (what the
    # judge found missing, the queries tried) and by the tracker (which appends the new round).
    pipeline.connect("router.query", "query_joiner.value")
    pipeline.connect("router.query", "selector.query")  # the answer is for the question as asked
    pipeline.connect("query_joiner.value", "rewriter.query")
    link(pipeline, "rewriter", list(RETRIEVAL_PATHS), "queries")
    pipeline.connect("rewriter.query", "joiner.primary_query")  # the question outweighs its rewrites
    query_readers = ["judge", "loop", *([RERANKER] if has_reranker(pipeline) else []),
                     *([ROUND_RANKER] if round_ranker else [])]
    link(pipeline, "rewriter", query_readers, "query")
    link(pipeline, evidence, ["judge", "tracker"], "documents")
    link(pipeline, "rewriter", ["tracker", *([ROUND_RANKER] if round_ranker else [])], "plan")
    if round_ranker is not None:
        link(pipeline, ROUND_RANKER, ["tracker"], "rerank")
    elif reports_rerank(reranker):  # the LLM reranker's calls and seconds in each round's trace
        link(pipeline, RERANKER, ["tracker"], "rerank")
    if coverage is not None:
        pipeline.connect("judge.evaluation", "coverage.evaluation")
        pipeline.connect("rewriter.query", "coverage.query")
        link(pipeline, "coverage", ["tracker"], "evaluation")
    else:
        link(pipeline, "judge", ["tracker"], "evaluation")
    link(pipeline, "tracker", ["loop"], "rounds", "passed", "uncovered", "improved", "round")
    # the loop's three ways out: another round, the answer, or the web search and then the answer
    pipeline.connect("loop.retry_query", "query_joiner.value")
    for receiver in ("rewriter.rounds", "tracker.rounds"):
        pipeline.connect("loop.retry_rounds", receiver)
    for socket in ("passed_rounds", "web_rounds"):
        pipeline.connect(f"loop.{socket}", "rounds_joiner.value")
    pipeline.connect("loop.web_query", "web_search.query")
    link(pipeline, "web_search", ["web_merger"], "documents", "status", "message")
    for receiver in ("selector", "finalizer"):
        pipeline.connect("rounds_joiner.value", f"{receiver}.rounds")
        pipeline.connect("web_merger.web", f"{receiver}.web")
    return pipeline


def build_rag_pipeline(document_store: KnowledgeBaseStore, settings: Settings, top_k: int = 10) -> Pipeline:
    """The baseline: one retrieval of the original query, no judge, straight to the answer."""
    pipeline = Pipeline()
    add_retrieval(pipeline, document_store, settings, top_k=top_k, reranker=make_reranker(settings, top_k))
    add_answer_stage(pipeline, settings)
    for receiver in ("selector", "finalizer"):
        pipeline.connect(f"{evidence_output(pipeline)}.documents", f"{receiver}.documents")
    return pipeline
