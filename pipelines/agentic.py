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
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from components.builders.answer_finalizer import AnswerFinalizer
from components.builders.evidence_selector import EvidenceSelector
from components.builders.retrieval_state import RetrievalState
from components.generators.answer_generator import AnswerGenerator
from components.generators.query_rewriter import QueryRewriter
from components.joiners.web_evidence_merger import WebEvidenceMerger
from components.routers.query_router import QueryRouter
from components.routers.round_tracker import RoundTracker
from components.websearch.serpapi_web_search import SerpAPIWebSearch
from config.settings import Settings
from helpers.contracts import RERANKER, RETRIEVAL_PATHS
from helpers.loop_state import LoopState
from pipelines.judges import make_judge
from pipelines.prompts import ANSWER_TEMPLATE
from pipelines.retrieval import add_retrieval, evidence_output, has_reranker, make_reranker

CACHE_SIZE = 256


def loop_routes(max_rounds: int) -> list[dict[str, Any]]:
    """pass → answer; fail, rounds left and improving → rewrite again; otherwise → web search."""
    return [
        {"condition": "{{ state.passed }}", "output": "state", "output_name": "passed_state",
         "output_type": LoopState, "output_passthrough": True},
        {"condition": f"{{{{ state.improved and state.round < {max_rounds} }}}}", "output": ["query", "state"],
         "output_name": ["retry_query", "retry_state"], "output_type": [str, LoopState], "output_passthrough": True},
        {"condition": "{{ True }}", "output": ["query", "state"], "output_name": ["web_query", "web_state"],
         "output_type": [str, LoopState], "output_passthrough": True},
    ]


def add_answer_stage(pipeline: Pipeline) -> None:
    """Selector → prompt → answer → finalizer: takes ``selector.state`` (a `LoopState`), gives ``finalizer.result``."""
    pipeline.add_component("selector", EvidenceSelector())
    pipeline.add_component("prompt", ChatPromptBuilder(template=ANSWER_TEMPLATE,
                                                       required_variables=["query", "evidence", "situation"]))
    pipeline.add_component("answer", AnswerGenerator())
    pipeline.add_component("finalizer", AnswerFinalizer())
    pipeline.connect("selector.evidence", "prompt.evidence")
    pipeline.connect("selector.situation", "prompt.situation")
    pipeline.connect("selector.query", "prompt.query")
    pipeline.connect("selector.notes", "prompt.notes")
    pipeline.connect("prompt.prompt", "answer.messages")
    pipeline.connect("selector.situation", "answer.situation")
    for target in ("answer", "finalizer"):  # the answer is checked against what it was written from
        pipeline.connect("selector.evidence", f"{target}.evidence")
        pipeline.connect("selector.query", f"{target}.query")
    pipeline.connect("selector.situation", "finalizer.situation")
    pipeline.connect("selector.state", "finalizer.state")
    for name in ("text", "error", "llm_calls", "seconds", "removed", "cut_off"):
        pipeline.connect(f"answer.{name}", f"finalizer.{name}")


def build_agentic_pipeline(document_store: QdrantDocumentStore, settings: Settings, top_k: int = 10,
                           require_models: bool = True) -> Pipeline:
    """The full loop as one serialisable Pipeline (see DESIGN.md §1); ``require_models=False`` builds it even
    where the trained models it names are not there yet (YAML export)."""
    pipeline = Pipeline(max_runs_per_component=settings.max_rounds + 2)
    pipeline.add_component("router", QueryRouter())
    pipeline.add_component("query_joiner", BranchJoiner(str))
    pipeline.add_component("rewriter", QueryRewriter(rewrite_first_round=settings.rewrite_first_round))
    add_retrieval(pipeline, document_store, settings, top_k=top_k, reranker=make_reranker(settings))
    pipeline.add_component("judge", make_judge(settings, require_model=require_models))
    pipeline.add_component("tracker", RoundTracker())
    pipeline.add_component("loop", ConditionalRouter(routes=loop_routes(settings.max_rounds)))
    pipeline.add_component("web_search", SerpAPIWebSearch())
    pipeline.add_component("web_merger", WebEvidenceMerger())
    pipeline.add_component("state_joiner", BranchJoiner(LoopState))
    add_answer_stage(pipeline)

    pipeline.connect("router.query", "query_joiner.value")
    pipeline.connect("query_joiner.value", "rewriter.query")
    for path in RETRIEVAL_PATHS:
        pipeline.connect("rewriter.queries", f"{path}.queries")
    pipeline.connect("rewriter.query", "joiner.primary_query")  # the question outweighs its rewrites
    evidence = f"{evidence_output(pipeline)}.documents"
    if has_reranker(pipeline):
        pipeline.connect("rewriter.query", f"{RERANKER}.query")
    pipeline.connect(evidence, "judge.documents")
    pipeline.connect(evidence, "tracker.documents")
    pipeline.connect("rewriter.query", "judge.query")
    pipeline.connect("rewriter.state", "tracker.state")
    pipeline.connect("rewriter.round_info", "tracker.round_info")
    pipeline.connect("judge.evaluation", "tracker.evaluation")
    pipeline.connect("tracker.state", "loop.state")
    pipeline.connect("tracker.query", "loop.query")
    pipeline.connect("loop.retry_query", "query_joiner.value")
    pipeline.connect("loop.retry_state", "rewriter.state")
    pipeline.connect("loop.passed_state", "state_joiner.value")
    pipeline.connect("loop.web_query", "web_search.query")
    pipeline.connect("loop.web_state", "web_merger.state")
    for name in ("documents", "status", "message"):
        pipeline.connect(f"web_search.{name}", f"web_merger.{name}")
    pipeline.connect("web_merger.state", "state_joiner.value")
    pipeline.connect("state_joiner.value", "selector.state")
    return pipeline


def build_rag_pipeline(document_store: QdrantDocumentStore, settings: Settings, top_k: int = 10) -> Pipeline:
    """The baseline: one retrieval of the original query, no judge, straight to the answer."""
    pipeline = Pipeline()
    add_retrieval(pipeline, document_store, settings, top_k=top_k, reranker=make_reranker(settings))
    pipeline.add_component("state", RetrievalState())
    add_answer_stage(pipeline)
    pipeline.connect(f"{evidence_output(pipeline)}.documents", "state.documents")
    pipeline.connect("state.state", "selector.state")
    return pipeline
