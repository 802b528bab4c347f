"""`LoopState`: everything the retrieve → judge → retry loop carries from round to round, and the trace.

It travels through the pipeline's sockets (never kept on a component), so concurrent runs cannot mix, and it is
immutable: each loop component returns a new state (`dataclasses.replace`), so what a component reads and writes is
what its sockets carry. The round being run (its queries and rewrite) goes from the rewriter to the tracker on its
own socket (``round_info``), not inside the state.

Usage::

    state = LoopState(query="公司收集我的个人信息需要我同意吗")
    state.trace()   # JSON-serialisable dict for the API and the CLI
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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


@dataclass(frozen=True)
class LoopState:
    """The original query, the rounds so far and the best evidence of all of them."""

    query: str
    round: int = 0
    best_score: float = -1.0
    best_round: int = 0
    best_documents: list[Document] = field(default_factory=list)
    last_score: float = -1.0
    improved: bool = False
    passed: bool = False
    missing: str = ""
    tried_queries: list[str] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    web: dict[str, Any] | None = None
    web_documents: list[Document] = field(default_factory=list)
    llm_calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    route: dict[str, Any] = field(default_factory=dict)
    decision: str = ""

    def counted(self, stage: str, calls: int, seconds: float, **changes: Any) -> LoopState:
        """A new state with one stage's LLM calls and seconds added to the totals (and ``changes`` applied)."""
        return replace(self, llm_calls={**self.llm_calls, stage: self.llm_calls.get(stage, 0) + calls},
                       seconds={**self.seconds, stage: round(self.seconds.get(stage, 0.0) + seconds, 3)}, **changes)

    def round_decisions(self) -> list[str]:
        """What the loop did after each round: pass, retry, or give up (→ web search)."""
        decisions = []
        for i, entry in enumerate(self.rounds, start=1):
            if entry["evaluation"].get("passed"):
                decisions.append("pass")
            elif i < len(self.rounds):
                decisions.append("retry")
            else:
                decisions.append("web_search" if self.web is not None else "give_up")
        return decisions

    def trace(self) -> dict[str, Any]:
        rounds = [{**entry, "decision": decision} for entry, decision in zip(self.rounds, self.round_decisions(),
                                                                             strict=True)]
        return {
            "query": self.query,
            "route": self.route,
            "rounds": rounds,
            "best_round": self.best_round,
            "best_score": self.best_score,
            "decision": self.decision,
            "web": self.web,
            "llm_calls": dict(self.llm_calls),
            "llm_calls_total": sum(self.llm_calls.values()),
            "seconds": dict(self.seconds),
        }
