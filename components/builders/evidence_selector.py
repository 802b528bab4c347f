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

How many local articles the answer reads: ``max_local`` when the judge passed them, ``max_local_unsure`` when it
did not (``partial``, ``supplemented``), where the gold article is more often ranked below the first five
(`benchmarks/reports/evidence_size.md`). Plain RAG mode (unjudged) reads ``max_local``.

For ``partial`` and ``supplemented`` it also gives the answer's ``preface``: one line on what the knowledge base
does not settle (the judge's note, `helpers.checks.unsettled.unsettled_line`), streamed and written before the answer.

It reads the judged rounds (agentic mode: the best round's documents are the local candidates) or, in plain RAG
mode, the one retrieval's ``documents``, and the web outcome where the loop searched the web.

Usage::

    out = EvidenceSelector(max_local=5, max_local_unsure=8).run(query="…", rounds=tracker_out["rounds"])
    out["situation"], [d.meta["key"] for d in out["evidence"]]
"""

from dataclasses import replace
from typing import Any

from haystack import Document, component

from helpers.checks.prompt_guard import quote_data
from helpers.checks.unsettled import unsettled_line
from helpers.records.rounds import Round, WebOutcome, best_round, still_missing

NONE_RELEVANCE = 1.0  # a judged relevance at or below this (of 10) means the hits are not about the question


@component
class EvidenceSelector:
    """Picks the evidence (local articles first, then web results) and the answer situation.

    :param max_local: local articles given to the answer when the judge passed them (and in plain RAG mode).
    :param max_local_unsure: local articles given when the judge did not pass them (``None``: ``max_local``).
    :param max_web: web results given to the answer.
    """

    def __init__(self, max_local: int = 5, max_web: int = 3, max_local_unsure: int | None = None) -> None:
        for name, value in (("max_local", max_local), ("max_web", max_web), ("max_local_unsure", max_local_unsure)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        self.max_local = max_local
        self.max_web = max_web
        self.max_local_unsure = max_local if max_local_unsure is None else max_local_unsure

    @staticmethod
    def _as_evidence(doc: Document, label: str) -> Document:
        """A labelled copy whose text cannot close the prompt's <<< >>> data block."""
        meta = {**doc.meta, "evidence_label": label}
        if "title" in meta:
            meta["title"] = quote_data(str(meta["title"]))
        return replace(doc, content=quote_data(doc.content or ""), meta=meta)

    @component.output_types(evidence=list[Document], situation=str, query=str, notes=str, preface=str)
    def run(self, query: str, rounds: list[Round] | None = None, documents: list[Document] | None = None,
            web: WebOutcome | None = None) -> dict[str, Any]:
        """:param rounds: the judged rounds (agentic mode);
        :param documents: the one unjudged retrieval (plain RAG mode), used when there are no rounds;
        :param web: the web search's outcome, when the loop gave up on local evidence."""
        rounds = rounds or []
        best = best_round(rounds)
        candidates = best.documents if best is not None else list(documents or [])
        size = self.max_local_unsure if rounds and not rounds[-1].passed else self.max_local
        local = [self._as_evidence(d, str(i)) for i, d in enumerate(candidates[:size], start=1)]
        found = web.documents if web is not None else []
        web_evidence = [self._as_evidence(d, f"网页{i}") for i, d in enumerate(found[: self.max_web], start=1)]
        judge_failed = bool(rounds) and all(r.evaluation.get("error") for r in rounds)
        relevance = float(best.evaluation.get("relevance") or 0.0) if best is not None else 0.0
        missing = still_missing(rounds)
        if not rounds:
            situation = "unjudged" if local else "none"
        elif rounds[-1].passed:
            situation = "sufficient"
        elif web_evidence:
            situation = "supplemented"
        elif local and (judge_failed or relevance > NONE_RELEVANCE):
            situation = "partial"
        else:
            situation = "none"
        notes = []
        if web is not None and web.status != "ok":
            notes.append(web.message)
        if judge_failed:
            notes.append("证据评估失败，无法确认检索到的法条是否充分。")
        elif rounds and situation != "sufficient" and missing:
            notes.append(f"评估认为还缺少：{missing}")
        evidence = local + web_evidence if situation != "none" else []
        # the best evidence failed the judge: the answer says first which part of the question it does not settle
        preface = unsettled_line(missing) if situation in ("partial", "supplemented") else ""
        return {"evidence": evidence, "situation": situation, "query": query,
                "notes": "\n".join(n for n in notes if n), "preface": preface}
