"""EvidenceSelector: decides what the answer may use and in which situation the answer is written.

Situations:

- ``sufficient``: the judge passed the local evidence;
- ``supplemented``: local evidence did not pass, web results were found and are added after it;
- ``partial``: local evidence did not pass (or the judge failed) and there is no web help — the answer uses
  what was found and says it may be incomplete;
- ``none``: nothing relevant was found (no hits, or the judge rated their relevance ≤ 1/10; for the trained
  evaluator, a probability ≤ 0.1 that they hold a relevant article) — a short honest
  reply, no LLM call;
- ``unjudged``: plain RAG mode (one retrieval, no judge).

Usage::

    out = EvidenceSelector(max_local=5).run(state=state)
    out["situation"], [d.meta["key"] for d in out["evidence"]]
"""

from dataclasses import replace
from typing import Any

from haystack import Document, component

from helpers.loop_state import LoopState
from helpers.prompt_guard import quote_data

NONE_RELEVANCE = 1.0  # a judged relevance at or below this (of 10) means the hits are not about the question


@component
class EvidenceSelector:
    """Picks the evidence (local articles first, then web results) and the answer situation.

    :param max_local: local articles given to the answer.
    :param max_web: web results given to the answer.
    """

    def __init__(self, max_local: int = 5, max_web: int = 3) -> None:
        self.max_local = max_local
        self.max_web = max_web

    @staticmethod
    def _as_evidence(doc: Document, label: str) -> Document:
        """A labelled copy whose text cannot close the prompt's <<< >>> data block."""
        meta = {**doc.meta, "evidence_label": label}
        if "title" in meta:
            meta["title"] = quote_data(str(meta["title"]))
        return replace(doc, content=quote_data(doc.content or ""), meta=meta)

    @staticmethod
    def _best_relevance(state: LoopState) -> float:
        best = next((r for r in state.rounds if r["round"] == state.best_round), None)
        return float(best["evaluation"].get("relevance") or 0.0) if best else 0.0

    @component.output_types(evidence=list[Document], situation=str, query=str, notes=str, state=LoopState)
    def run(self, state: LoopState) -> dict[str, Any]:
        local = [self._as_evidence(d, str(i)) for i, d in enumerate(state.best_documents[: self.max_local], start=1)]
        web = [self._as_evidence(d, f"网页{i}") for i, d in enumerate(state.web_documents[: self.max_web], start=1)]
        judged = bool(state.rounds)
        judge_failed = judged and all(r["evaluation"].get("error") for r in state.rounds)
        if not judged:
            situation = "unjudged" if local else "none"
        elif state.passed:
            situation = "sufficient"
        elif web:
            situation = "supplemented"
        elif local and (judge_failed or self._best_relevance(state) > NONE_RELEVANCE):
            situation = "partial"
        else:
            situation = "none"
        notes = []
        if state.web and state.web.get("status") != "ok":
            notes.append(state.web.get("message", ""))
        if judge_failed:
            notes.append("证据评估失败，无法确认检索到的法条是否充分。")
        elif judged and situation != "sufficient" and state.missing:
            notes.append(f"评估认为还缺少：{state.missing}")
        evidence = local + web if situation != "none" else []
        state = replace(state, decision=state.decision or situation)
        return {"evidence": evidence, "situation": situation, "query": state.query,
                "notes": "\n".join(n for n in notes if n), "state": state}
