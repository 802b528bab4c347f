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
    """A new `LoopState` with one round's documents, evaluation and round info (the state is never changed)."""

    @component.output_types(state=LoopState, query=str)
    def run(self, state: LoopState, documents: list[Document], evaluation: dict,
            round_info: dict | None = None) -> dict[str, Any]:
        """:param round_info: the round's queries and rewrite, from the rewriter."""
        number = state.round + 1
        total = float(evaluation.get("total", 0.0))
        best: dict[str, Any] = {}
        if total >= state.best_score:  # a tie goes to the later round: it searched the original and the rewrites
            best = {"best_score": total, "best_round": number, "best_documents": list(documents)}
        entry = {
            "round": number,
            **(round_info or {}),
            "retrieved": [document_summary(d) for d in documents],
            "evaluation": {k: evaluation.get(k) for k in EVALUATION_FIELDS if k in evaluation or k in REQUIRED},
        }
        state = state.counted(
            "judge", int(evaluation.get("llm_calls", 0)), float(evaluation.get("seconds", 0.0)),
            round=number, improved=total > state.best_score, last_score=total, passed=bool(evaluation.get("passed")),
            missing=str(evaluation.get("missing") or ""), rounds=[*state.rounds, entry], **best)
        return {"state": state, "query": state.query}
