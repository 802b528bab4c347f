"""What travels round the loop is the list of rounds: immutable records, each assembled by the tracker from the
rewriter's, the retrieval's and the judge's outputs; everything else the loop decides on is derived from it."""

import dataclasses
from pathlib import Path

import pytest
import yaml
from haystack import Document

from components.builders.evidence_selector import EvidenceSelector
from components.joiners.web_evidence_merger import WebEvidenceMerger
from components.routers.round_tracker import RoundTracker
from helpers.records.rounds import Round, best_round, loop_trace, tried_queries

REPO = Path(__file__).resolve().parents[3]
DOC = Document(content="处理个人信息应当取得个人同意。", meta={"key": "k13", "law": "法", "article_no": "第十三条"})
OTHER = Document(content="基于个人同意处理个人信息的，该同意应当由个人在充分知情的前提下作出。",
                 meta={"key": "k14", "law": "法", "article_no": "第十四条"})


def judged(total: float, passed: bool = False, missing: str = "", calls: int = 1) -> dict:
    return {"total": total, "passed": passed, "missing": missing, "relevance": 8.0, "llm_calls": calls, "seconds": 0.5}


def record(tracker: RoundTracker, rounds: list[Round] | None, queries: list[str], documents: list[Document],
           evaluation: dict) -> dict:
    plan = {"round": len(rounds or []) + 1, "queries": queries, "rewrite": {"status": "ok"}, "llm_calls": 1,
            "seconds": 0.25, "feedback": rounds[-1].missing if rounds else ""}
    return tracker.run(plan=plan, documents=documents, evaluation=evaluation, rounds=rounds)


def test_a_round_cannot_be_changed_once_recorded():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Round(number=1, queries=["问"], documents=[], evaluation={}).number = 2  # type: ignore[misc]


def test_the_tracker_appends_a_round_from_its_sockets_and_leaves_the_rounds_it_was_given_alone():
    tracker = RoundTracker()
    first = record(tracker, None, ["问"], [DOC], judged(30.0, missing="例外情形"))
    assert (first["round"], first["passed"], first["improved"]) == (1, False, True)
    before = first["rounds"]
    second = record(tracker, before, ["问", "改写"], [OTHER], judged(20.0))
    assert len(before) == 1 and before[0].documents == [DOC]  # untouched
    assert (second["round"], second["passed"], second["improved"]) == (2, False, False)
    rounds = second["rounds"]
    assert rounds[1].feedback == "例外情形" and rounds[1].queries == ["问", "改写"]
    assert best_round(rounds) is rounds[0]  # the higher total
    assert tried_queries(rounds) == ["问", "改写"]
    assert rounds[1].llm_calls == {"rewriter": 1, "judge": 1}


def test_a_tie_keeps_the_later_round_but_does_not_count_as_improved():
    tracker = RoundTracker()
    rounds = record(tracker, None, ["问"], [DOC], judged(30.0))["rounds"]
    out = record(tracker, rounds, ["问", "改写"], [OTHER], judged(30.0))
    assert out["improved"] is False and best_round(out["rounds"]).documents == [OTHER]


def test_a_plan_for_another_round_is_refused():
    with pytest.raises(ValueError, match="round 3 was planned"):
        RoundTracker().run(plan={"round": 3, "queries": ["问"]}, documents=[], evaluation=judged(1.0))


def test_selector_and_trace_read_the_rounds_and_the_web_outcome():
    rounds = [Round(number=1, queries=["问"], documents=[DOC], evaluation=judged(12.0, missing="例外情形"),
                    llm_calls={"rewriter": 0, "judge": 1}, seconds={"rewriter": 0.0, "judge": 0.5})]
    web = WebEvidenceMerger().run(documents=[], status="unavailable", message="没有密钥")["web"]
    out = EvidenceSelector().run(query="问", rounds=rounds, web=web)
    assert out["situation"] == "partial" and [d.meta["key"] for d in out["evidence"]] == ["k13"]
    assert "没有密钥" in out["notes"] and "例外情形" in out["notes"]
    trace = loop_trace("问", rounds, web, out["situation"], answer=(1, 2.0))
    assert [r["decision"] for r in trace["rounds"]] == ["web_search"]
    assert trace["llm_calls"] == {"rewriter": 0, "judge": 1, "answer": 1} and trace["llm_calls_total"] == 2
    assert trace["web"]["status"] == "unavailable" and trace["best_round"] == 1


def test_the_loop_sockets_name_what_each_component_reads():
    """In the agentic pipeline (its generated YAML twin, which equals the builder's dump): what goes round the loop
    is the query and the rounds, and no component takes a shared state object."""
    spec = yaml.safe_load((REPO / "yaml_pipelines" / "agentic.yaml").read_text(encoding="utf-8"))
    edges = [(c["sender"].split("."), c["receiver"].split(".")) for c in spec["connections"]]
    reads = {}
    for _, (receiver, socket) in edges:
        reads.setdefault(receiver, set()).add(socket)
    assert reads["tracker"] == {"plan", "documents", "evaluation", "rounds"}
    assert reads["rewriter"] == {"query", "rounds"}
    assert reads["loop"] == {"query", "rounds", "passed", "uncovered", "improved", "round"}
    assert reads["coverage"] == {"query", "evaluation"}  # the judge's verdict, read again with the question
    assert reads["selector"] == {"query", "rounds", "web"}
    assert {socket for (sender, socket), _ in edges if sender == "loop"} == {
        "retry_query", "retry_rounds", "passed_rounds", "web_query", "web_rounds"}
    assert not any("state" in socket for edge in edges for _, socket in edge)


def test_the_verdict_of_a_round_is_pass_fail_or_uncovered_and_the_trace_gives_the_last_ones():
    def judged(**evaluation):
        return Round(number=1, queries=["问"], documents=[], evaluation={"total": 20.0, **evaluation})

    assert [judged(passed=True).outcome, judged(passed=False).outcome] == ["pass", "fail"]
    uncovered = judged(passed=False, verdict="uncovered", evidence_passed=True)
    assert uncovered.uncovered and uncovered.outcome == "uncovered"
    assert uncovered.verdict()["verdict"] == "uncovered" and uncovered.verdict()["evidence_passed"] is True
    assert loop_trace("问", [uncovered], web=None, decision="partial")["verdict"] == "uncovered"
    assert loop_trace("问", [], web=None, decision="rag")["verdict"] is None
