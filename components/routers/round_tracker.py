"""RoundTracker: closes a retrieval round — records its trace, keeps the best evidence of all rounds so far,
and sets the flags the loop's `ConditionalRouter` decides on (``passed``, ``improved``, ``round``).

Best evidence = the round with the highest judge total. On a tie the later round's evidence is kept (the loop
still stops, as the round did not improve): every round searches the original question, later rounds add the
rewrites, and on STARD the fused original + rewrites found more gold articles than the original alone
(research/reports/rewrite_study.md).

Usage::

    tracker = RoundTracker()
    out = tracker.run(state=state, documents=fused_docs, evaluation=judge_evaluation)
    out["state"].passed, out["state"].improved, out["query"]
"""

from typing import Any

from haystack import Document, component

from helpers.loop_state import LoopState, document_summary

REQUIRED = ("scores", "total", "passed", "relevance", "reasoning", "missing", "error")
# what the trained evaluator adds (JUDGE=evaluator|both): its probability, threshold, per-passage probabilities and,
# on a fail with JUDGE=both, the LLM judge's scores
EVALUATION_FIELDS = ("judge", *REQUIRED, "probability", "threshold", "passages", "llm_judge")


@component
class RoundTracker:
    """Updates the `LoopState` with one round's documents and evaluation."""

    @component.output_types(state=LoopState, query=str)
    def run(self, state: LoopState, documents: list[Document], evaluation: dict) -> dict[str, Any]:
        state.round += 1
        total = float(evaluation.get("total", 0.0))
        state.improved = total > state.best_score
        if total >= state.best_score:  # a tie goes to the later round: it searched the original and the rewrites
            state.best_score, state.best_round, state.best_documents = total, state.round, list(documents)
        state.last_score = total
        state.passed = bool(evaluation.get("passed"))
        state.missing = str(evaluation.get("missing") or "")
        state.count("judge", int(evaluation.get("llm_calls", 0)), float(evaluation.get("seconds", 0.0)))
        state.rounds.append({
            "round": state.round,
            **state.pending,
            "retrieved": [document_summary(d) for d in documents],
            "evaluation": {k: evaluation.get(k) for k in EVALUATION_FIELDS if k in evaluation or k in REQUIRED},
        })
        state.pending = {}
        return {"state": state, "query": state.query}
