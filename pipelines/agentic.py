"""The agentic query pipeline (route → rewrite → retrieve → judge → loop or web search → cited answer), the
plain RAG baseline over the same components, and `AgenticRAG`, which builds them once and answers questions.

Usage::

    from pipelines.agentic import AgenticRAG
    rag = AgenticRAG.from_settings()          # opens the store, builds and warms up both pipelines
    result = rag.ask("公司收集我的个人信息需要我同意吗", mode="agentic")
    print(result["answer"], result["citations"], result["trace"])
    rag.close()
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.joiners import BranchJoiner
from haystack.components.routers import ConditionalRouter
from haystack.dataclasses import StreamingChunk
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from components.answer_finalizer import AnswerFinalizer, citation_of
from components.answer_generator import AnswerGenerator
from components.evidence_selector import EvidenceSelector
from components.loop_state import LoopState
from components.query_rewriter import QueryRewriter
from components.query_router import QueryRouter
from components.retrieval_state import RetrievalState
from components.round_tracker import RoundTracker
from components.serpapi_web_search import SerpAPIWebSearch
from components.web_evidence_merger import WebEvidenceMerger
from document_store.qdrant_store import open_document_store
from pipelines.judges import make_judge
from pipelines.prompts import ANSWER_TEMPLATE
from pipelines.retrieval import add_retrieval, build_retrieval_pipeline, make_reranker, retrieve
from pipelines.settings import Settings
from pipelines.steps import StepCallback, run_with_steps

MODES = ("agentic", "rag")
RETRIEVAL_COMPONENTS = ("citation", "bm25", "dense")
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
    pipeline.connect("selector.evidence", "finalizer.evidence")
    pipeline.connect("selector.situation", "finalizer.situation")
    pipeline.connect("selector.state", "finalizer.state")
    for name in ("text", "error", "llm_calls", "seconds"):
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
    for name in RETRIEVAL_COMPONENTS:
        pipeline.connect("rewriter.queries", f"{name}.queries")
    pipeline.connect("rewriter.query", "joiner.primary_query")  # the question outweighs its rewrites
    evidence = "reranker.documents" if "reranker" in pipeline.graph.nodes else "joiner.documents"
    if "reranker" in pipeline.graph.nodes:
        pipeline.connect("rewriter.query", "reranker.query")
    pipeline.connect(evidence, "judge.documents")
    pipeline.connect(evidence, "tracker.documents")
    pipeline.connect("rewriter.query", "judge.query")
    pipeline.connect("rewriter.state", "tracker.state")
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
    evidence = "reranker.documents" if "reranker" in pipeline.graph.nodes else "joiner.documents"
    pipeline.connect(evidence, "state.documents")
    pipeline.connect("state.state", "selector.state")
    return pipeline


def normalise(query: str) -> str:
    return " ".join(query.split()).rstrip("?？。!！ ").lower()


def pipeline_inputs(
    pipeline: Pipeline,
    mode: str,
    query: str,
    filters: dict[str, Any] | None = None,
    top_k: int | None = None,
    streaming_callback: Callable[[StreamingChunk], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """The run() data of a query pipeline built by `build_agentic_pipeline` / `build_rag_pipeline`."""
    data: dict[str, dict[str, Any]] = {name: {"filters": filters} for name in RETRIEVAL_COMPONENTS}
    if top_k:
        data["joiner"] = {"top_k": top_k}
    data["answer"] = {"streaming_callback": streaming_callback}
    if mode == "agentic":
        data["router"] = {"query": query}
    else:
        for name in RETRIEVAL_COMPONENTS:
            data[name]["queries"] = [query]
        data["state"] = {"query": query}
        if "reranker" in pipeline.graph.nodes:
            data["reranker"] = {"query": query}
    return data


def answer_with(
    pipeline: Pipeline,
    mode: str,
    query: str,
    filters: dict[str, Any] | None = None,
    top_k: int | None = None,
    streaming_callback: Callable[[StreamingChunk], None] | None = None,
    on_step: StepCallback | None = None,
) -> dict[str, Any]:
    """Run a query pipeline (built here or loaded from YAML) and shape its output as the result dict.

    With ``on_step``, each stage is reported as it ends (see `pipelines.steps`); call it then from a thread without
    a running event loop.
    """
    started = time.perf_counter()
    data = pipeline_inputs(pipeline, mode, query, filters, top_k, streaming_callback)
    if on_step is None:
        output = pipeline.run(data, include_outputs_from={"router"} if mode == "agentic" else None)
    else:
        output = run_with_steps(pipeline, data, on_step)
    route = output.get("router", {}).get("route", {"route": "retrieval", "decided_by": "mode", "llm_calls": 0})
    if "reply" in output.get("router", {}):
        result = {"answer": output["router"]["reply"], "citations": [], "unverified_citations": [],
                  "situation": "chitchat", "needs_human": False, "answer_error": None, "scores": None, "evidence": [],
                  "trace": {"query": query, "route": route, "rounds": [], "llm_calls": {"router": route["llm_calls"]},
                            "llm_calls_total": route["llm_calls"], "seconds": {}}}
    else:
        result = output["finalizer"]["result"]
        trace = result["trace"]
        trace["route"] = {**route, **trace.get("route", {})}
        trace["llm_calls"]["router"] = route.get("llm_calls", 0)
        trace["llm_calls_total"] = sum(trace["llm_calls"].values())
    result["mode"] = mode
    result["trace"]["total_seconds"] = round(time.perf_counter() - started, 3)
    return result


class AgenticRAG:
    """Both pipelines over one store, built and warmed up once; `ask` is safe to call from several threads."""

    def __init__(self, store: QdrantDocumentStore, settings: Settings, top_k: int = 10) -> None:
        self.store, self.settings, self.top_k = store, settings, top_k
        self.pipelines = {"agentic": build_agentic_pipeline(store, settings, top_k),
                          "rag": build_rag_pipeline(store, settings, top_k),
                          "retrieve": build_retrieval_pipeline(store, settings, top_k=top_k)}
        for pipeline in self.pipelines.values():
            pipeline.warm_up()
        self._cache: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
        self._cache_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings | None = None, collection: str | None = None) -> AgenticRAG:
        settings = settings or Settings.from_env()
        return cls(open_document_store(settings, collection), settings)

    def close(self) -> None:
        self.store.close()

    def retrieve(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, Any]:
        """Retrieval only (no LLM): the fused articles for ``query``."""
        started = time.perf_counter()
        docs = retrieve(self.pipelines["retrieve"], [query], top_k=top_k or self.top_k, filters=filters)
        return {"mode": "retrieve", "query": query, "documents": [
            {**citation_of(d), "score": d.score, "paths": d.meta.get("retrieval", {}).get("paths", [])} for d in docs],
            "trace": {"query": query, "total_seconds": round(time.perf_counter() - started, 4)}}

    def clear_cache(self) -> None:
        """Forget cached answers (after the knowledge base changed)."""
        with self._cache_lock:
            self._cache.clear()

    def ask(
        self,
        query: str,
        mode: str = "agentic",
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
        on_step: StepCallback | None = None,
    ) -> dict[str, Any]:
        """Answer ``query``; returns answer, citations, scores, ``needs_human``, ``answer_error`` and the trace.

        Answers are cached per normalised question for the session, except those the model could not write.

        ``on_step`` receives each stage as it ends (route, rewrite, retrieval paths, judge, decision, …).
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        query = query.strip()
        if not query:
            raise ValueError("query is empty")
        key = (mode, normalise(query), repr(filters), top_k)
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                cached = copy.deepcopy(self._cache[key])  # callers may edit what they get (the chat API does)
                cached["trace"]["cached"] = True
                if on_step is not None:
                    on_step({"stage": "cache", "message": "同一问题的结果来自缓存"})
                return cached
        result = answer_with(self.pipelines[mode], mode, query, filters, top_k, streaming_callback, on_step)
        if result.get("answer_error"):  # the model was down: asking again later should get a real answer
            return result
        with self._cache_lock:
            self._cache[key] = copy.deepcopy(result)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return result
