"""Live steps and cancellation at stage boundaries (`application.steps.run_with_steps`)."""

import pytest
from haystack import Pipeline, component

from application.steps import run_with_steps
from helpers.records.cancellation import Cancellation, RunCancelled


@component
class Stage:
    """Passes its text on and records that it ran; the first one can cancel the run (a client that leaves)."""

    def __init__(self, ran: list[str], cancel: Cancellation | None = None) -> None:
        self.ran, self.cancel = ran, cancel

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, str]:
        self.ran.append(text)
        if self.cancel is not None:
            self.cancel.cancel()
        return {"text": text + "!"}


def two_stages(ran: list[str], cancel: Cancellation | None) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("first", Stage(ran, cancel))
    pipeline.add_component("second", Stage(ran))
    pipeline.connect("first.text", "second.text")
    return pipeline


def test_a_cancelled_run_stops_at_the_next_stage_boundary():
    ran: list[str] = []
    cancel = Cancellation()
    with pytest.raises(RunCancelled):
        run_with_steps(two_stages(ran, cancel), {"first": {"text": "问"}}, cancel=cancel)
    assert ran == ["问"]  # the second stage never ran


def test_an_uncancelled_run_goes_to_its_end():
    ran: list[str] = []
    output = run_with_steps(two_stages(ran, None), {"first": {"text": "问"}}, cancel=Cancellation())
    assert ran == ["问", "问!"] and output["second"]["text"] == "问!!"


def test_the_decision_step_shows_the_figure_of_the_judge_that_decided():
    """Issue 50: the UI showed "最高分 23.65/40" for the trained evaluator, whose total is only its probability × 40,
    which reads like a failing score; the step now carries the evaluator's own probability and pass line."""
    from application.steps import LOOP_DECISIONS, describe_step
    from helpers.records.rounds import Round

    socket = next(iter(LOOP_DECISIONS))
    evaluator = Round(number=1, queries=["问"], documents=[],
                      evaluation={"total": 23.65, "passed": True, "probability": 0.591, "threshold": 0.48})
    step = describe_step("loop", {socket: [evaluator]})
    assert (step["best_probability"], step["threshold"], step["best_score"]) == (0.591, 0.48, 23.65)
    rubric = Round(number=1, queries=["问"], documents=[], evaluation={"total": 31.0, "passed": True})
    step = describe_step("loop", {socket: [rubric]})
    assert step["best_probability"] is None and step["best_score"] == 31.0


def test_the_coverage_check_shows_a_step_only_when_it_flags_and_the_decision_says_uncovered():
    from application.steps import describe_step
    from helpers.records.rounds import Round

    coverage = {"probability": 0.71, "threshold": 0.6, "document": "政府信息公开条例", "flagged": True}
    flagged = {"passed": False, "total": 30.0, "verdict": "uncovered", "coverage": coverage}
    assert describe_step("coverage", {"evaluation": flagged}) == {
        "stage": "coverage", "document": "政府信息公开条例", "probability": 0.71, "threshold": 0.6}
    quiet = {"passed": True, "total": 30.0, "coverage": {**coverage, "flagged": False}}
    assert describe_step("coverage", {"evaluation": quiet}) is None
    uncovered = Round(number=1, queries=["问"], documents=[], evaluation=flagged)
    assert describe_step("loop", {"web_rounds": [uncovered]})["decision"] == "uncovered"
    failed = Round(number=1, queries=["问"], documents=[], evaluation={"passed": False, "total": 10.0})
    assert describe_step("loop", {"web_rounds": [failed]})["decision"] == "web_search"
