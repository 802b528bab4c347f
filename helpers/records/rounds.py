"""What the retrieve → judge → retry loop passes between its components: the rounds so far and the web outcome.

Nothing else travels round the loop. Each `Round` is an immutable record that `RoundTracker` assembles from three
components' outputs (the rewriter's ``plan``, the retrieval's ``documents`` and the judge's ``evaluation``); the
loop's flags (passed, improved, round number), the best evidence, the queries already tried and the trace are all
derived from the list of rounds by the functions here, so every loop component's sockets say exactly what it reads
and writes, and a round can never change after it was recorded.

Usage::

    rounds = [Round(number=1, queries=["问"], documents=docs, evaluation={"total": 30.0, "passed": False})]
    best_round(rounds).documents, tried_queries(rounds)
    loop_trace("问", rounds, web=None, decision="partial")   # JSON-serialisable dict for the API and the CLI
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from haystack import Document


def document_summary(doc: Document) -> dict[str, Any]:
    """What the trace keeps of a retrieved document: key, score and the paths that found it."""
    retrieval = doc.meta.get("retrieval", {})
    return {
        "key": doc.meta.get("key") or doc.meta.get("url") or doc.id,
        "score": round(float(doc.score), 5) if doc.score is not None else None,
        "paths": retrieval.get("paths", []),
    }


# what the trained evaluator adds (JUDGE=evaluator|both): its probability, threshold, per-passage probabilities and,
# on a fail with JUDGE=both, the LLM judge's scores; what the coverage check adds: its reading of the question
# (``coverage``) and, when it finds the decisive rule outside the knowledge base, ``verdict`` ``uncovered`` with the
# judge's own verdict on the evidence (``evidence_passed``)
REQUIRED = ("scores", "total", "passed", "relevance", "reasoning", "missing", "error")
EVALUATION_FIELDS = ("judge", *REQUIRED, "probability", "threshold", "passages", "llm_judge", "coverage", "verdict",
                     "evidence_passed")
UNCOVERED = "uncovered"  # the third verdict: the knowledge base does not hold the decisive rule


@dataclass(frozen=True)
class Round:
    """One retrieval round: what was searched (and why), what was found, and the judge's verdict on it."""

    number: int
    queries: list[str]
    documents: list[Document]
    evaluation: dict[str, Any]
    rewrite: dict[str, Any] = field(default_factory=dict)
    feedback: str = ""
    llm_calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return float(self.evaluation.get("total", 0.0))

    @property
    def passed(self) -> bool:
        return bool(self.evaluation.get("passed"))

    @property
    def missing(self) -> str:
        return str(self.evaluation.get("missing") or "")

    @property
    def uncovered(self) -> bool:
        """The knowledge base does not hold the decisive rule (the coverage check's verdict): straight to the web."""
        return self.evaluation.get("verdict") == UNCOVERED

    @property
    def outcome(self) -> str:
        """The judge's verdict in one word: ``pass``, ``fail`` or ``uncovered``."""
        return UNCOVERED if self.uncovered else "pass" if self.passed else "fail"

    def verdict(self) -> dict[str, Any]:
        """The judge's evaluation as the result and the trace show it (its bookkeeping left out)."""
        return {k: self.evaluation.get(k) for k in EVALUATION_FIELDS if k in self.evaluation or k in REQUIRED}

    def entry(self, decision: str) -> dict[str, Any]:
        """The round as the trace shows it."""
        return {"round": self.number, "queries": list(self.queries), "rewrite": dict(self.rewrite),
                "feedback": self.feedback, "retrieved": [document_summary(d) for d in self.documents],
                "evaluation": self.verdict(), "decision": decision}


@dataclass(frozen=True)
class WebOutcome:
    """The web search's results, or why there are none (``status`` ok | unavailable | error | empty)."""

    documents: list[Document]
    status: str
    message: str = ""

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message,
                "results": [document_summary(d) for d in self.documents]}


def best_round(rounds: list[Round]) -> Round | None:
    """The round with the highest judge total; a tie goes to the later round (it searched the original question
    and more rewrites: on STARD the fused original + rewrites found more gold articles than the original alone,
    research/reports/rewrite_study.md)."""
    best: Round | None = None
    for entry in rounds:
        if best is None or entry.total >= best.total:
            best = entry
    return best


def improved(rounds: list[Round]) -> bool:
    """Whether the last round scored higher than every round before it (the first round always has)."""
    return bool(rounds) and all(rounds[-1].total > r.total for r in rounds[:-1])


def still_missing(rounds: list[Round]) -> str:
    """What the last round's judge said is missing ("" before the first round)."""
    return rounds[-1].missing if rounds else ""


def tried_queries(rounds: list[Round]) -> list[str]:
    """Every query searched so far, in the order first searched."""
    return list(dict.fromkeys(q for r in rounds for q in r.queries))


def round_decisions(rounds: list[Round], web: WebOutcome | None) -> list[str]:
    """What the loop did after each round: pass, retry, or give up (→ web search)."""
    decisions = []
    for i, entry in enumerate(rounds, start=1):
        if entry.passed:
            decisions.append("pass")
        elif i < len(rounds):
            decisions.append("retry")
        else:
            decisions.append("web_search" if web is not None else "give_up")
    return decisions


def stage_totals(rounds: list[Round], **stages: tuple[int, float]) -> tuple[dict[str, int], dict[str, float]]:
    """LLM calls and seconds per stage over the rounds, plus ``stages`` given as (calls, seconds)."""
    calls: dict[str, int] = {}
    seconds: dict[str, float] = {}
    parts = [(r.llm_calls, r.seconds) for r in rounds]
    parts += [({stage: n}, {stage: s}) for stage, (n, s) in stages.items()]
    for part_calls, part_seconds in parts:
        for stage, n in part_calls.items():
            calls[stage] = calls.get(stage, 0) + n
        for stage, s in part_seconds.items():
            seconds[stage] = round(seconds.get(stage, 0.0) + s, 3)
    return calls, seconds


def loop_trace(query: str, rounds: list[Round], web: WebOutcome | None, decision: str,
               route: dict[str, Any] | None = None, **stages: tuple[int, float]) -> dict[str, Any]:
    """The run's trace: the rounds with what the loop decided after each, the web search, LLM calls and seconds
    per stage (``stages`` adds stages outside the loop, as (calls, seconds))."""
    best = best_round(rounds)
    calls, seconds = stage_totals(rounds, **stages)
    return {
        "query": query,
        "route": dict(route or {}),
        "rounds": [r.entry(d) for r, d in zip(rounds, round_decisions(rounds, web), strict=True)],
        "best_round": best.number if best else 0,
        "best_score": best.total if best else -1.0,
        "verdict": rounds[-1].outcome if rounds else None,
        "decision": decision,
        "web": web.summary() if web is not None else None,
        "llm_calls": calls,
        "llm_calls_total": sum(calls.values()),
        "seconds": seconds,
    }
