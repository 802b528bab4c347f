"""RoundTracker: closes a retrieval round. It records the round from the outputs that made it (the rewriter's
``plan``, the fused ``documents``, the judge's ``evaluation``) and gives the loop's `ConditionalRouter` the flags it
decides on (``uncovered``: the coverage check found the decisive rule outside the knowledge base).

It reads the rounds so far (from the loop; none in round 1) and writes a new list with the round appended: the
rounds it was given are left as they are. Which round's evidence is best, and whether the round improved on all
before it, are derived from the list (`helpers.records.rounds`).

Usage::

    tracker = RoundTracker()
    out = tracker.run(plan=rewriter_out["plan"], documents=fused_docs, evaluation=judge_evaluation)
    out["rounds"], out["passed"], out["uncovered"], out["improved"], out["round"]
"""

from typing import Any

from haystack import Document, component

from helpers.records.rounds import Round, improved


@component
class RoundTracker:
    """Appends one `Round` to the rounds so far and says whether it passed, whether the knowledge base lacks the
    decisive rule, whether it improved, and its number."""

    @component.output_types(rounds=list[Round], passed=bool, uncovered=bool, improved=bool, round=int)
    def run(self, plan: dict, documents: list[Document], evaluation: dict,
            rounds: list[Round] | None = None, rerank: dict | None = None) -> dict[str, Any]:
        """:param plan: the round's number, queries, rewrite, feedback, LLM calls and seconds, from the rewriter;
        :param rounds: the rounds before this one, from the loop (None in round 1);
        :param rerank: the round ranker's LLM calls and seconds, where it reranked this round."""
        rounds = list(rounds or [])
        if plan.get("round", len(rounds) + 1) != len(rounds) + 1:
            raise ValueError(f"round {plan.get('round')} was planned, but {len(rounds)} rounds came before it")
        this = Round(
            number=len(rounds) + 1,
            queries=list(plan.get("queries") or []),
            documents=list(documents),
            evaluation=dict(evaluation),
            rewrite=dict(plan.get("rewrite") or {}),
            feedback=str(plan.get("feedback") or ""),
            llm_calls={"rewriter": int(plan.get("llm_calls", 0)), "judge": int(evaluation.get("llm_calls", 0)),
                       **({"reranker": int(rerank.get("llm_calls", 0))} if rerank else {})},
            seconds={"rewriter": float(plan.get("seconds", 0.0)), "judge": float(evaluation.get("seconds", 0.0)),
                     **({"reranker": float(rerank.get("seconds", 0.0))} if rerank else {})},
        )
        rounds.append(this)
        return {"rounds": rounds, "passed": this.passed, "uncovered": this.uncovered, "improved": improved(rounds),
                "round": this.number}
