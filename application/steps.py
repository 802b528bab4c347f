"""Live steps: what a query pipeline's components produced, as small JSON events for a UI, while it runs.

`run_with_steps` runs a pipeline with `Pipeline.run_async_generator`, which yields each component's output as soon
as it finishes; `describe_step` turns the outputs that matter to a user (route, rewrite, each retrieval path, fusion,
judge scores, the coverage check when it flags, the loop's decision, web search, answer) into events and skips plumbing
(joiners, prompt builder).

Usage::

    outputs = run_with_steps(pipeline, data, on_step=lambda event: print(event["stage"], event))
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from haystack import Document, Pipeline

from helpers.records.cancellation import Cancellation
from helpers.records.contracts import RETRIEVAL_PATHS
from helpers.records.rounds import UNCOVERED, Round, best_round, document_summary

StepCallback = Callable[[dict[str, Any]], None]
TOP_KEYS = 5
LOOP_DECISIONS = {"passed_rounds": "pass", "retry_rounds": "retry", "web_rounds": "web_search"}


def _top(documents: list[Document], n: int = TOP_KEYS) -> list[dict[str, Any]]:
    return [document_summary(d) for d in documents[:n]]


def describe_step(name: str, outputs: dict[str, Any]) -> dict[str, Any] | None:
    """One UI event for the output of component ``name``; None for components a user does not need to see."""
    if name == "router":
        route = outputs.get("route", {})
        return {"stage": "route", "route": route.get("route"), "decided_by": route.get("decided_by")}
    if name == "rewriter":
        plan = outputs["plan"]
        return {"stage": "rewrite", "round": plan["round"], "queries": outputs["queries"],
                "status": plan["rewrite"].get("status"), "reason": plan["rewrite"].get("reason"),
                "feedback": plan["feedback"]}
    if name in RETRIEVAL_PATHS:
        documents = outputs.get("documents", [])
        return {"stage": "retrieve", "path": name, "count": len(documents), "top": _top(documents)}
    if name in ("joiner", "reranker"):
        documents = outputs.get("documents", [])
        return {"stage": "fuse" if name == "joiner" else "rerank", "count": len(documents), "top": _top(documents)}
    if name == "judge":
        evaluation = outputs["evaluation"]
        return {"stage": "judge", "judge": evaluation.get("judge", "llm"), "scores": evaluation["scores"],
                "total": evaluation["total"], "passed": evaluation["passed"], "missing": evaluation["missing"],
                "reasoning": evaluation["reasoning"], "error": evaluation["error"],
                "probability": evaluation.get("probability"), "threshold": evaluation.get("threshold"),
                "passages": evaluation.get("passages"), "llm_calls": evaluation.get("llm_calls", 0)}
    if name == "coverage":
        coverage = outputs["evaluation"].get("coverage") or {}
        if not coverage.get("flagged"):
            return None  # a question the knowledge base may answer: nothing to show beyond the judge
        return {"stage": "coverage", "document": coverage["document"], "probability": coverage["probability"],
                "threshold": coverage["threshold"]}
    if name == "loop":
        for socket, decision in LOOP_DECISIONS.items():
            if socket in outputs:
                rounds: list[Round] = outputs[socket]
                best = best_round(rounds)
                evaluation = best.evaluation if best else {}
                if rounds and rounds[-1].uncovered:
                    decision = UNCOVERED
                return {"stage": "decision", "decision": decision, "round": len(rounds),
                        "best_score": best.total if best else -1.0, "best_round": best.number if best else 0,
                        # the trained evaluator's own figure, when it judged (its total is only probability × 40)
                        "best_probability": evaluation.get("probability"), "threshold": evaluation.get("threshold")}
        return None
    if name == "web_search":
        return {"stage": "web_search", "status": outputs.get("status"), "message": outputs.get("message", ""),
                "results": [{"title": d.meta.get("title", ""), "url": d.meta.get("url", "")}
                            for d in outputs.get("documents", [])]}
    if name == "selector":
        return {"stage": "evidence", "situation": outputs["situation"], "count": len(outputs["evidence"])}
    if name == "answer":
        return {"stage": "answer", "error": outputs.get("error", ""), "seconds": outputs.get("seconds", 0.0)}
    return None


def run_with_steps(pipeline: Pipeline, data: dict[str, Any], on_step: StepCallback | None = None,
                   cancel: Cancellation | None = None) -> dict[str, Any]:
    """Run ``pipeline`` like ``pipeline.run(data, include_outputs_from=<all>)``, reporting each step as it ends and
    stopping with `RunCancelled` at the first stage boundary after ``cancel`` was set.

    Must be called from a thread without a running event loop (a server worker or a plain script).
    """
    names = set(pipeline.graph.nodes)

    async def consume() -> dict[str, Any]:
        outputs: dict[str, Any] = {}
        previous: dict[str, Any] | None = None
        async for partial in pipeline.run_async_generator(data, include_outputs_from=names):
            # Each finished component yields {name: outputs}; the last yield is the whole result (one key only when
            # a single component ran, and then it repeats the previous yield).
            if cancel is not None:
                cancel.check()
            if on_step is not None and len(partial) == 1 and partial != previous:
                (name, result), = partial.items()
                if (event := describe_step(name, result)) is not None:
                    on_step(event)
            outputs.update(partial)
            previous = partial
        return outputs

    return asyncio.run(consume())
