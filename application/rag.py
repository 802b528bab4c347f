"""`AgenticRAG`: both query pipelines over one store, built once, answering questions with a per-session cache.

Usage::

    from application.rag import AgenticRAG
    rag = AgenticRAG.from_settings()          # opens the store, builds and warms up both pipelines
    result = rag.ask("公司收集我的个人信息需要我同意吗", mode="agentic")
    print(result.answer, result.citations, result.trace, result.warnings)
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
from haystack.dataclasses import StreamingChunk

from application.steps import StepCallback, run_with_steps
from components.builders.answer_finalizer import citation_of
from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.source_manifest import SourceManifest
from helpers.records.cancellation import Cancellation
from helpers.records.contracts import PIPELINE_MODES, RERANKER, RETRIEVAL_PATHS, ROUND_RANKER, Mode
from helpers.records.result import RAGResult
from pipelines.agentic import build_agentic_pipeline, build_rag_pipeline
from pipelines.knowledge_base_warnings import as_of_warnings, knowledge_base_warnings
from pipelines.retrieval import build_retrieval_pipeline, depth_inputs, has_reranker, retrieve
from pipelines.stores import open_document_store

CACHE_SIZE = 256


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
    data: dict[str, dict[str, Any]] = {path: {"filters": filters} for path in RETRIEVAL_PATHS}
    data.update(depth_inputs(pipeline, top_k))
    if ROUND_RANKER in data:
        data[ROUND_RANKER]["filters"] = filters
    data["answer"] = {"streaming_callback": streaming_callback}
    if mode == "agentic":
        data["router"] = {"query": query}
    else:
        for path in RETRIEVAL_PATHS:
            data[path]["queries"] = [query]
        data["selector"] = {"query": query}
        if has_reranker(pipeline):
            data.setdefault(RERANKER, {})["query"] = query
    return data


def answer_with(pipeline: Pipeline, mode: str, query: str, *, on_step: StepCallback | None = None,
                cancel: Cancellation | None = None, **inputs: Any) -> RAGResult:
    """Run a query pipeline (built here or loaded from YAML) and shape its output as the result dict.

    With ``on_step``, each stage is reported as it ends (see `application.steps`); call it then from a thread without
    a running event loop.
    """
    started = time.perf_counter()
    data = pipeline_inputs(pipeline, mode, query, **inputs)  # filters, top_k, streaming_callback
    if on_step is None and cancel is None:
        output = pipeline.run(data, include_outputs_from={"router"} if mode == "agentic" else None)
    else:
        output = run_with_steps(pipeline, data, on_step, cancel)
    route = output.get("router", {}).get("route", {"route": "retrieval", "decided_by": "mode", "llm_calls": 0})
    if "reply" in output.get("router", {}):
        result = RAGResult.chitchat(output["router"]["reply"], mode, {
            "query": query, "route": route, "rounds": [], "llm_calls": {"router": route["llm_calls"]},
            "llm_calls_total": route["llm_calls"], "seconds": {}})
    else:
        result = output["finalizer"]["result"]
        trace = result.trace
        trace["route"] = {**route, **trace.get("route", {})}
        trace["llm_calls"]["router"] = route.get("llm_calls", 0)
        trace["llm_calls_total"] = sum(trace["llm_calls"].values())
    result.mode = mode
    result.trace["total_seconds"] = round(time.perf_counter() - started, 3)
    return result


class AgenticRAG:
    """Both pipelines over one store, built and warmed up once; `ask` is safe to call from several threads.

    Every result carries ``warnings`` (`warnings_for`): the knowledge base's, read when it is opened and again by
    `refresh_warnings` after indexing changed it, and those of the request's ``as_of``.
    """

    def __init__(self, store: KnowledgeBaseStore, settings: Settings, top_k: int = 10) -> None:
        self.store, self.settings, self.top_k = store, settings, top_k
        self.name = store.knowledge_base
        self.pipelines = {"agentic": build_agentic_pipeline(store, settings, top_k),
                          "rag": build_rag_pipeline(store, settings, top_k),
                          "retrieve": build_retrieval_pipeline(store, settings, top_k=top_k)}
        for pipeline in self.pipelines.values():
            pipeline.warm_up()
        self._cache: OrderedDict[tuple, RAGResult] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.warnings: list[str] = []
        self.refresh_warnings()

    @classmethod
    def from_settings(cls, settings: Settings | None = None, collection: str | None = None) -> AgenticRAG:
        settings = settings or Settings.from_env()
        return cls(open_document_store(settings, collection), settings)

    def close(self) -> None:
        self.store.close()

    def refresh_warnings(self) -> None:
        """Read again what is wrong with the knowledge base (`knowledge_base_warnings`): after indexing changed it."""
        self.warnings = knowledge_base_warnings(SourceManifest(self.store), self.settings, self.name)

    def warnings_for(self, query: str, as_of: str | None = None,
                     filters: dict[str, Any] | None = None) -> list[str]:
        """The warnings a result for ``query`` carries: the knowledge base's and, when ``as_of`` (``YYYY-MM-DD``)
        is given, one for each law the query names that the knowledge base holds in no version in force that day."""
        return [*self.warnings, *as_of_warnings(self.pipelines["retrieve"], query, as_of, filters, self.name)]

    def retrieve(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None,
                 as_of: str | None = None) -> RAGResult:
        """Retrieval only (no LLM): the fused articles for ``query``. ``filters`` select the statute versions
        searched; ``as_of``, the day they were made for, only adds its warnings (`warnings_for`)."""
        started = time.perf_counter()
        docs = retrieve(self.pipelines["retrieve"], [query], top_k=top_k or self.top_k, filters=filters)
        result = RAGResult.retrieval(
            [{**citation_of(d), "score": d.score, "paths": d.meta.get("retrieval", {}).get("paths", [])} for d in docs],
            {"query": query, "total_seconds": round(time.perf_counter() - started, 4)})
        result.warnings = self.warnings_for(query, as_of, filters)
        result.knowledge_base = self.name
        return result

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
        cancel: Cancellation | None = None,
        as_of: str | None = None,
    ) -> RAGResult:
        """Answer ``query``; returns answer, citations, scores, ``needs_human``, ``answer_error``, the trace and
        the warnings (`warnings_for`; ``as_of`` is the day ``filters`` select statute versions for).

        Answers are cached per normalised question for the session, except those the model could not write.

        ``on_step`` receives each stage as it ends (route, rewrite, retrieval paths, judge, decision, …); a set
        ``cancel`` stops the run with `RunCancelled` at the next stage boundary.
        """
        result = self._answer(query, mode, filters, top_k, streaming_callback, on_step, cancel)
        result.warnings = self.warnings_for(query, as_of, filters)
        result.knowledge_base = self.name
        return result

    def _answer(self, query: str, mode: str, filters: dict[str, Any] | None, top_k: int | None,
                streaming_callback: Callable[[StreamingChunk], None] | None, on_step: StepCallback | None,
                cancel: Cancellation | None) -> RAGResult:
        """`ask` without the warnings: from the cache, or by running the mode's pipeline."""
        mode = Mode.parse(mode, PIPELINE_MODES).value
        query = query.strip()
        if not query:
            raise ValueError("query is empty")
        key = (mode, normalise(query), repr(filters), top_k)
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                cached = copy.deepcopy(self._cache[key])  # callers may edit what they get (the chat API does)
                cached.trace["cached"] = True
                if on_step is not None:
                    on_step({"stage": "cache", "message": "同一问题的结果来自缓存"})
                return cached
        result = answer_with(self.pipelines[mode], mode, query, filters=filters, top_k=top_k,
                             streaming_callback=streaming_callback, on_step=on_step, cancel=cancel)
        if result.answer_error:  # the model was down: asking again later should get a real answer
            return result
        with self._cache_lock:
            self._cache[key] = copy.deepcopy(result)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return result
