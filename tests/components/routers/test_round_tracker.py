"""RoundTracker: the round it records from its inputs (the reranker's share, the flags, what a missing plan field
becomes) and its independence from the dicts it was given. Appending, the rounds given left alone, ties and a plan
for another round are in tests/helpers/records/test_rounds.py."""

from haystack import Document

from components.routers.round_tracker import RoundTracker

DOC = Document(content="处理个人信息应当取得个人同意。", meta={"key": "k13"})


def evaluation(total: float = 20.0, **more: object) -> dict:
    return {"total": total, "passed": False, "missing": "", "llm_calls": 1, "seconds": 0.5, **more}


def test_a_reranked_round_counts_the_rerankers_calls_and_seconds() -> None:
    plan = {"round": 1, "queries": ["问"], "llm_calls": 1, "seconds": 0.25}
    out = RoundTracker().run(plan=plan, documents=[DOC], evaluation=evaluation(), rerank={"llm_calls": 12,
                                                                                          "seconds": 1.5})
    this, = out["rounds"]
    assert this.llm_calls == {"rewriter": 1, "judge": 1, "reranker": 12}
    assert this.seconds == {"rewriter": 0.25, "judge": 0.5, "reranker": 1.5}


def test_a_round_without_a_reranker_has_no_reranker_entry() -> None:
    this, = RoundTracker().run(plan={"round": 1, "queries": ["问"]}, documents=[], evaluation=evaluation())["rounds"]
    assert "reranker" not in this.llm_calls and "reranker" not in this.seconds


def test_a_bare_plan_is_round_one_with_nothing_rewritten() -> None:
    """The fields a plan may lack (a first round that was not rewritten) default to empty and zero."""
    out = RoundTracker().run(plan={}, documents=[DOC], evaluation={"total": 36.0, "passed": True})
    this, = out["rounds"]
    assert (out["round"], this.number) == (1, 1)
    assert (this.queries, this.rewrite, this.feedback) == ([], {}, "")
    assert this.llm_calls == {"rewriter": 0, "judge": 0} and this.seconds == {"rewriter": 0.0, "judge": 0.0}


def test_the_flags_are_those_of_the_round_just_recorded() -> None:
    tracker = RoundTracker()
    passed = tracker.run(plan={"round": 1}, documents=[DOC], evaluation=evaluation(36.0, passed=True))
    assert (passed["passed"], passed["uncovered"], passed["improved"]) == (True, False, True)
    uncovered = tracker.run(plan={"round": 1}, documents=[DOC],
                            evaluation=evaluation(36.0, verdict="uncovered", evidence_passed=True))
    assert (uncovered["passed"], uncovered["uncovered"]) == (False, True)


def test_an_empty_list_of_rounds_is_round_one_too() -> None:
    assert RoundTracker().run(plan={"round": 1}, documents=[], evaluation=evaluation(), rounds=[])["round"] == 1


def test_the_round_keeps_its_own_copies_of_what_it_was_given() -> None:
    """A component that edits its output afterwards (or the next round's rewriter) cannot change a recorded round."""
    queries, documents, judged = ["问"], [DOC], evaluation(missing="例外")
    plan = {"round": 1, "queries": queries, "rewrite": {"status": "ok"}}
    this, = RoundTracker().run(plan=plan, documents=documents, evaluation=judged)["rounds"]
    queries.append("改写")
    documents.clear()
    judged["missing"] = "已改"
    plan["rewrite"]["status"] = "changed"
    assert this.queries == ["问"] and this.documents == [DOC]
    assert this.missing == "例外" and this.rewrite == {"status": "ok"}

