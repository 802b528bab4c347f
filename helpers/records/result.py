"""`RAGResult`: what answering a question gives back, in every mode, built here and turned into JSON here.

The agentic loop and plain RAG fill it through `components.builders.answer_finalizer.AnswerFinalizer`; small talk,
agent mode and retrieval-only use the constructors below. The CLI, the chat API, the UI's events and the
benchmarks read its fields; `to_dict` is the one JSON form (the REST API's response, the stream's final event).

Usage::

    result = rag.ask("公司收集我的个人信息需要我同意吗")
    result.answer, result.citations, result.needs_human, result.trace["llm_calls_total"], result.warnings
    json.dumps(result.to_dict(), ensure_ascii=False)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from helpers.records.contracts import Mode


@dataclass
class RAGResult:
    """The answer and how it was reached.

    :param answer: the text for the user (citations checked; unverified ones marked).
    :param citations: the cited evidence (``citation_of`` entries; ``by_model`` says the model wrote it).
    :param situation: the evidence's verdict: ``sufficient``, ``partial``, ``none``, ``web``, ``chitchat``,
        ``agent`` or ``retrieve``.
    :param needs_human: the answer rests on weak or no evidence: a person should look at it.
    :param answer_error: why the model wrote no answer (the articles are listed instead); None if it did.
    :param mode: `Mode` value.
    :param trace: rounds, route, LLM calls and seconds per stage (agent mode: its tool steps).
    :param warnings: what makes this result less reliable than it looks, one sentence each with the command that
        fixes it: the knowledge base's problems (interrupted sources, stale BM25 weights, …) and laws the question
        names that the knowledge base holds in no version in force on the ``as_of`` asked for.
    :param answer_id: the id that feedback on this answer names (``POST /feedback``, ``feedback --last``).
    """

    answer: str
    mode: str
    trace: dict[str, Any]
    citations: list[dict[str, Any]] = field(default_factory=list)
    situation: str = ""
    needs_human: bool = False
    answer_error: str | None = None
    unverified_citations: list[str] = field(default_factory=list)
    scores: dict[str, Any] | None = None  # the judge's evaluation of the evidence answered from
    evidence: list[dict[str, Any]] = field(default_factory=list)  # what the answer stage was given
    knowledge_base: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)  # agent mode: thought / tool / input / observation
    stop_reason: str | None = None  # agent mode: final_answer, max_steps, fallback_search, llm_error, chitchat
    sources: list[dict[str, Any]] = field(default_factory=list)  # agent mode: everything its tools found
    documents: list[dict[str, Any]] = field(default_factory=list)  # retrieve mode: the ranked articles
    warnings: list[str] = field(default_factory=list)
    answer_id: str | None = None  # what feedback on this answer names (`application.feedback`); None: not an answer

    @classmethod
    def chitchat(cls, reply: str, mode: str, trace: dict[str, Any]) -> RAGResult:
        """Small talk, answered without retrieval."""
        return cls(answer=reply, mode=mode, trace=trace, situation="chitchat", stop_reason=(
            "chitchat" if mode == Mode.AGENT else None))

    @classmethod
    def retrieval(cls, documents: list[dict[str, Any]], trace: dict[str, Any]) -> RAGResult:
        """Retrieval only: the ranked articles, no LLM."""
        return cls(answer="", mode=Mode.RETRIEVE.value, trace=trace, situation="retrieve", documents=documents)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every field, deep-copied."""
        return dataclasses.asdict(self)
